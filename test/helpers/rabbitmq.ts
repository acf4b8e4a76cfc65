export interface RabbitCluster { backendUrl: string; authPort: number; destroy(): Promise<void> }
export async function startRabbitCluster(): Promise<RabbitCluster> { throw new Error('not yet'); }
