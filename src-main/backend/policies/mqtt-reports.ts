import type { EventLog } from '../events/event-log.ts';
import { ApiError } from '../errors.ts';
import type { PolicyService } from './service.ts';

interface Reporter {
  id: number;
  entityId: number;
  name: string;
}

/** Refusals noted at most once per device and task in this time (a looping agent must not flood the history). */
const REFUSAL_INTERVAL_MS = 10_000;

/**
 * Task status reports arriving over MQTT (`{"status": …, "reason"?: …}`): applied to the device's
 * own task, or refused and noted in the history (MQTT has no answer to carry the refusal).
 */
export function mqttTaskReports(deployments: PolicyService, events: EventLog) {
  const lastRefusal = new Map<string, number>();
  return async (agent: Reporter, taskId: number, payload: Buffer): Promise<void> => {
    let body: unknown;
    try {
      body = JSON.parse(payload.toString('utf8'));
    } catch {
      body = null;
    }
    try {
      await deployments.report(agent.id, taskId, body, 'mqtt');
    } catch (error) {
      const message = error instanceof ApiError ? error.message : 'the report could not be applied';
      const key = `${agent.id} ${taskId}`;
      const now = Date.now();
      if (now - (lastRefusal.get(key) ?? 0) < REFUSAL_INTERVAL_MS) return;
      if (lastRefusal.size > 10_000) lastRefusal.clear();
      lastRefusal.set(key, now);
      await events.record(
        'task.report_refused',
        `${agent.name} reported on task ${taskId} over MQTT: refused, ${message}`,
        { entityId: agent.entityId, agentId: agent.id },
        {
          task_id: taskId,
          reason: message,
          payload: payload.toString('utf8').slice(0, 300),
        },
      );
    }
  };
}
