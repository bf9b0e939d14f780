// The lint rules of baton's JavaScript: the web UI (web/*.js, ES modules in the browser) and
// the browser tests' drivers (tests/web/*.cjs, CommonJS in Node, whose page.evaluate callbacks
// run in the page). eslint's recommended set: undefined names, unused variables, unreachable
// code, duplicate keys and the like are errors. Chart is chart.js, loaded by index.html as a
// classic script before the modules.
import js from '@eslint/js';
import globals from 'globals';

export default [
  {
    files: ['web/*.js'],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.browser, Chart: 'readonly' } },
  },
  {
    files: ['tests/web/*.cjs'],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 2022, sourceType: 'commonjs', globals: { ...globals.node, ...globals.browser, Chart: 'readonly' } },
  },
];
