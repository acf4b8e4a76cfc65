import { describe, expect, it } from 'vitest';
import { searchCriteria } from '../../../src-main/backend/agent-api/task-routes.ts';
import { policyStatusTaskId, statusTaskId } from '../../../src-main/backend/broker/acl.ts';
import { progressText } from '../../../src-main/backend/policies/service.ts';
import { deployedFilePath, policyMessage, policyTopic } from '../../../src-main/backend/policies/wire.ts';
import { parsePolicyTopic } from '../../../src-main/device/policies.ts';

const agent = { id: 7, entityId: 1, fleetId: 3, topic: '/1/agent/SN7', name: 'SN7' };

describe('policy messages (the reference payload shapes)', () => {
  it('carry the value, the item, its version and the taskId', () => {
    expect(policyMessage({ policy: 'deployApp', value: 'org.example.app', itemId: 4, version: 42 }, 9)).toEqual({
      deployApp: 'org.example.app',
      id: 4,
      versionCode: 42,
      taskId: 9,
    });
    expect(policyMessage({ policy: 'deployFile', value: '%SDCARD%/Docs', itemId: 2, version: 1 }, 10)).toEqual({
      deployFile: '%SDCARD%/Docs',
      id: 2,
      version: 1,
      taskId: 10,
    });
    expect(policyMessage({ policy: 'removeApp', value: 'org.example.app' }, 11)).toEqual({
      removeApp: 'org.example.app',
      taskId: 11,
    });
    expect(policyMessage({ policy: 'removeFile', value: '/sdcard/a.pdf' }, 12)).toEqual({
      removeFile: '/sdcard/a.pdf',
      taskId: 12,
    });
    expect(policyTopic('/1/fleet/3', 'deployApp', 9)).toBe('/1/fleet/3/Policy/deployApp/Task/9');
    expect(deployedFilePath('%SDCARD%/Docs', 'a.pdf')).toBe('%SDCARD%/Docs/a.pdf');
    expect(deployedFilePath('%SDCARD%/Docs/', 'a.pdf')).toBe('%SDCARD%/Docs/a.pdf');
    expect(parsePolicyTopic('/1/fleet/3/Policy/deployApp/Task/9')).toEqual({ policy: 'deployApp', taskId: 9 });
    expect(parsePolicyTopic('/1/fleet/3/Policy/deployApp/Task/0')).toBeNull();
  });

  it('progress reads as a sentence', () => {
    expect(progressText({ total: 40, done: 37, failed: 2, pending: 1, in_progress: 0, canceled: 0 })).toBe(
      '37 of 40 done, 2 failed, 1 pending',
    );
    expect(progressText({ total: 3, done: 0, failed: 0, pending: 0, in_progress: 0, canceled: 3 })).toBe(
      '0 of 0 done, 3 canceled',
    );
  });
});

describe('status report topics', () => {
  it('T/Status/Task/<id> of the agent itself only', () => {
    expect(statusTaskId(agent, '/1/agent/SN7/Status/Task/12')).toBe(12);
    expect(statusTaskId(agent, '/1/agent/SN8/Status/Task/12')).toBeNull();
    expect(statusTaskId(agent, '/1/agent/SN7/Status/Task/012')).toBeNull();
    expect(statusTaskId(agent, '/1/agent/SN7/Status/Task/12/x')).toBeNull();
  });

  it("rc.6's <policy topic>/Status/Task/<id>, under its own fleet's or its own policy topic", () => {
    expect(policyStatusTaskId(agent, '/1/fleet/3/Policy/deployApp/Task/5/Status/Task/5')).toBe(5);
    expect(policyStatusTaskId(agent, '/1/agent/SN7/Policy/deployFile/Task/6/Status/Task/6')).toBe(6);
    expect(policyStatusTaskId(agent, '/1/fleet/4/Policy/deployApp/Task/5/Status/Task/5')).toBeNull();
    expect(policyStatusTaskId(agent, '/1/fleet/3/Policy/deployApp/Task/5/Status/Task/6')).toBeNull();
    expect(policyStatusTaskId(agent, '/1/fleet/3/Policy/+/Task/5/Status/Task/5')).toBeNull();
  });
});

describe('search criteria of search/PluginMdmTaskstatus', () => {
  it('reads the reference agent query', () => {
    const criteria = searchCriteria(
      '/api/search/PluginMdmTaskstatus/?criteria[0][field]=5&criteria[0][searchtype]=contains&criteria[0][value]=7&criteria[1][field]=6&criteria[1][searchtype]=contains&criteria[1][value]=12&forcedisplay=2',
    );
    expect(Object.fromEntries(criteria)).toEqual({ 5: 7, 6: 12 });
    expect(
      Object.fromEntries(
        searchCriteria('/api/search/PluginMdmTaskstatus?criteria%5B0%5D%5Bfield%5D=6&criteria%5B0%5D%5Bvalue%5D=3'),
      ),
    ).toEqual({ 6: 3 });
  });

  it('refuses what it cannot answer with a 400', () => {
    expect(() => searchCriteria('/x?criteria[0][field]=5&criteria[0][value]=abc')).toThrow(/numeric id/);
    expect(() => searchCriteria('/x?criteria[0][field]=99&criteria[0][value]=1')).toThrow(/Unknown search field/);
    expect(() => searchCriteria('/x?criteria[0][field]=5')).toThrow(/field and a value/);
  });
});
