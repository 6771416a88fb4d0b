// ESLint (flat config): typescript-eslint's recommended rules on src/, ESLint's on the plain
// JavaScript (tests, bench, scripts, editor resources). `npm run lint`; `npm test` runs it.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // What .gitignore leaves out, and docs.
  { ignores: ['dist/**', 'node_modules/**', '.nr5/**', '.demo/**', '.dam-emulator/**', 'bench/results/**', 'test/e2e/screenshots/**', 'tmp/**', 'coverage/**', '.nyc_output/**', 'docs/**'] },
  {
    files: ['src/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      // `const node = this` is Node-RED's own style in a node constructor (core nodes do the
      // same): the node is used inside many callbacks where `this` is something else.
      '@typescript-eslint/no-this-alias': 'off',
      // The checks of cookie values, header names and file names match control characters on purpose.
      'no-control-regex': 'off',
      // At the edges the shapes are not ours: express's req/res on httpNode and httpAdmin routes,
      // configs as Node-RED stores them, JSON from the wire before it is checked.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }]
    }
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: { ...globals.node, ...globals.mocha } },
    rules: {
      'no-control-regex': 'off',
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }]
    }
  },
  {
    files: ['eslint.config.mjs'],
    languageOptions: { sourceType: 'module' }
  },
  {
    // Browser tests and the screenshot script pass functions to page.evaluate(): their bodies run
    // in the editor's page, where the browser's and Node-RED's editor globals exist.
    files: ['test/e2e/**/*.js', 'scripts/screenshot-demo.js'],
    languageOptions: { globals: { ...globals.browser, RED: 'readonly', $: 'readonly', jQuery: 'readonly' } }
  },
  {
    // Editor code runs in the browser beside Node-RED's editor (RED, $, jQuery).
    files: ['resources/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser, RED: 'readonly', $: 'readonly', jQuery: 'readonly' } }
  }
);
