/** What a valid agent-API session grants, as resolved from its token. */
export interface SessionContext {
  token: string;
  userId: number;
  userKind: 'person' | 'agent';
  login: string;
  entityId: number;
  activeProfileId: number;
  /** The agent this (person's) session enrolled, and when; null otherwise. */
  enrolledAgentId: number | null;
  enrolledAt: string | null;
  /** Its number in opening order (sessions-repository): later sessions have higher ones. Null: opened before sessions were numbered. */
  seq: number | null;
}
