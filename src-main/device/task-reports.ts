// How a simulated agent tells the server where a task stands. Two ways, as the reference agents
// do: over MQTT (`T/Status/Task/<taskId>`, or release 2.0.0-rc.6's `<policy topic>/Status/Task/<taskId>`)
// or over REST (search its status row, then PUT it). A dialect picks one; the policy logic
// (policies.ts) does not care which.
import type { AgentApiClient } from './api-client.ts';

export type TaskReportStatus = 'received' | 'in progress' | 'waiting' | 'done' | 'failed' | 'canceled' | 'incompatible';

export interface TaskReport {
  taskId: number;
  /** The topic the policy arrived on (rc.6 reports under it). */
  policyTopic: string;
  status: TaskReportStatus;
  reason?: string;
}

export interface TaskReporter {
  report(report: TaskReport): Promise<void>;
}

export type MqttPublish = (topic: string, payload: string) => Promise<void>;

/** `{"status": …, "reason"?: …}` on `T/Status/Task/<id>` (or `<policy topic>/Status/Task/<id>` with `underPolicyTopic`, rc.6). */
export class MqttTaskReporter implements TaskReporter {
  private readonly publish: MqttPublish;
  private readonly agentTopic: string;
  private readonly underPolicyTopic: boolean;

  constructor(publish: MqttPublish, agentTopic: string, options: { underPolicyTopic?: boolean } = {}) {
    this.publish = publish;
    this.agentTopic = agentTopic;
    this.underPolicyTopic = options.underPolicyTopic ?? false;
  }

  async report({ taskId, policyTopic, status, reason }: TaskReport): Promise<void> {
    const base = this.underPolicyTopic ? policyTopic : this.agentTopic;
    await this.publish(`${base}/Status/Task/${taskId}`, JSON.stringify(reason === undefined ? { status } : { status, reason }));
  }
}

/** The reference agent's REST way: `search/PluginMdmTaskstatus` for the row id, then `PUT PluginMdmTaskstatus/<id>`. */
export class HttpTaskReporter implements TaskReporter {
  private readonly session: () => Promise<AgentApiClient>;
  private readonly agentId: string | number;
  private readonly rowIds = new Map<number, number>();

  /** `session` gives a client with an open session (the agent's api_token). */
  constructor(session: () => Promise<AgentApiClient>, agentId: string | number) {
    this.session = session;
    this.agentId = agentId;
  }

  async report({ taskId, status, reason }: TaskReport): Promise<void> {
    const client = await this.session();
    let rowId = this.rowIds.get(taskId);
    if (rowId === undefined) {
      const found = await client.findTaskStatus(this.agentId, taskId);
      if (found === null) throw new Error(`the server has no status row for task ${taskId} of this device`);
      this.rowIds.set(taskId, (rowId = found));
    }
    await client.putTaskStatus(rowId, reason === undefined ? { status } : { status, reason });
  }
}
