// Lint rules for the SKILL.nb JupyterLab extension: strict typing, no `any`, no console output.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/', 'lib-test/', 'node_modules/', '.yarn/', '**/*.d.ts', 'eslint.config.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    files: ['src/**/*.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'error',
      curly: ['error', 'all'],
      eqeqeq: 'error',
      '@typescript-eslint/naming-convention': [
        'error',
        { selector: 'interface', format: ['PascalCase'], custom: { regex: '^I[A-Z]', match: true } }
      ]
    }
  },
  {
    // The DOM sink rule: views build text nodes, never HTML strings.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { property: 'innerHTML', message: 'Set textContent or build elements (text from facts must stay text).' },
        { property: 'outerHTML', message: 'Set textContent or build elements.' },
        { property: 'insertAdjacentHTML', message: 'Build elements instead.' }
      ]
    }
  }
);
