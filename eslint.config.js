// Lint: typescript-eslint's type-aware rules over the whole tree, React's rules of hooks in the console,
// and the walls of the layer test (test/helpers/layers.ts) as import rules, so a broken wall shows in
// the editor as it is typed. test/unit/lint-walls.test.ts proves these walls agree with the layer test.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

// The walls, one entry per rule of test/helpers/layers.ts (RULES), the message naming that rule. An
// import is written relative to its file, so each wall matches the specifier's folder as it appears
// after the `../` that climb out of the room: `../../cli/serve.ts` from the backend, `../../src-main/`
// from the console. The layer test stays the authority (it resolves every import, `import()` too);
// these put the same walls in the editor.
const wall = (message, ...regexes) => regexes.map((regex) => ({ regex, message }));

const BACKEND = wall(
  'the backend runs headless: no electron, CLI, device simulator or console code',
  '^electron(/|$)',
  '^(\\.\\./)+(cli|device|electron)/',
  '(^|/)src-main/(cli|device|electron)/',
  '(^|/)src-renderer/',
);
const DEVICE = wall(
  'the device simulator is the conformance oracle: its own copy of the wire, not the backend or the shared contract',
  '^(\\.\\./)+backend/',
  '(^|/)src-main/backend/',
  '(^|/)src-shared/contract(/|$)',
);
const RENDERER = wall('the console runs in the browser: it imports src-shared, never src-main', '(^|/)src-main/');
const SHARED = wall('the shared contract stands alone: no src-main or src-renderer', '(^|/)src-(main|renderer)/');
const DOMAIN = wall(
  'domain rooms do not know the API: no admin-api/, agent-api/ or http/',
  '^(\\./|(\\.\\./)+)(admin-api|agent-api|http)/',
  '(^|/)src-main/backend/(admin-api|agent-api|http)/',
);

// One block per room. A later block replaces an earlier one's options for the files both match (flat
// config does not merge a rule's options), so the domain block repeats the backend's walls.
const walls = (files, patterns, ignores = []) => ({
  files,
  ignores,
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

export default tseslint.config(
  {
    ignores: [
      'out/',
      'node_modules/',
      'bench/results/',
      'test-results/',
      'playwright-report/',
      // electron-vite bundles its config into a temporary file beside it while the console build
      // runs, which npm test runs side by side with the lint: a file that vanishes mid-lint.
      '*.config.ts.*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { project: ['./tsconfig.json', './tsconfig.web.json'], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // A `let` read by a closure written before the value arrives (the broker's publisher, made before
      // the broker it publishes through) cannot be a `const`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_name` marks a value taken out on purpose (a rest that drops a key, a parameter a signature needs).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // The plain JavaScript files (this config, the bin shim) are in no tsconfig: no type-aware rules there.
    files: ['**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Tests read the JSON answers they assert on (t.admin, agentCall, the SSE and MQTT records): a
    // field read wrongly fails the assertion, and under `npm test` every admin answer is also checked
    // against its contract schema (MDM_CHECK_RESPONSES). Typing each answer would restate the contract.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Playwright reads a fixture's dependencies from its first parameter, which must be an object
    // pattern: a fixture that needs none is written `async ({}, use) =>`.
    files: ['test/e2e/**'],
    rules: { 'no-empty-pattern': 'off' },
  },
  {
    files: ['src-renderer/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: { 'react-hooks/rules-of-hooks': 'error', 'react-hooks/exhaustive-deps': 'error' },
  },
  walls(['src-main/backend/**'], BACKEND),
  walls(
    ['src-main/backend/**'],
    [...BACKEND, ...DOMAIN],
    ['src-main/backend/{admin-api,agent-api,http}/**', 'src-main/backend/{server,services}.ts', '**/routes.ts', '**/*-routes.ts'],
  ),
  walls(['src-main/device/**'], DEVICE),
  walls(['src-renderer/**'], RENDERER),
  walls(['src-shared/**'], SHARED),
);
