import { useEffect, useRef, useState } from 'react';
import type { AgentSummary as Agent } from '../../../src-shared/contract/index.ts';
import { changedIds } from '../../lib/devices.ts';

/** Rows that just appeared or changed flash once (a device enrolling during a demo): their ids, for 2.6 s. */
export function useFreshRows(agents: Agent[] | undefined): Set<number> {
  const previous = useRef<Agent[] | undefined>(undefined);
  const [fresh, setFresh] = useState<Set<number>>(new Set());
  useEffect(() => {
    if (!agents) return;
    const ids = changedIds(previous.current, agents);
    previous.current = agents;
    if (ids.length === 0 || ids.length > 200) return;
    setFresh((current) => new Set([...current, ...ids]));
    const timer = setTimeout(() => setFresh((current) => new Set([...current].filter((id) => !ids.includes(id)))), 2600);
    return () => clearTimeout(timer);
  }, [agents]);
  return fresh;
}
