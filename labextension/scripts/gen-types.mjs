/* global Buffer, URL */
// Generate src/types.ts from the contract's JSON Schema (read on stdin, TypeScript on stdout),
// formatted with the extension's prettier settings. Run through `scripts/gen_types.py` at the
// repository root, which also writes the schema and checks both for drift.
import { compile } from 'json-schema-to-typescript';
import * as prettier from 'prettier';

const BANNER = `/**
 * The JSON shapes the extension reads: \`run.describe()\` (served by the server extension),
 * the display bundle of skillnb outputs, the metadata mirror and the server's answers.
 *
 * GENERATED from skillnb_magics/skillnb/core/contract.schema.json (the pydantic models of
 * skillnb.core.contract) by scripts/gen_types.py: do not edit by hand. The extension only
 * renders these shapes and never derives workflow rules from them.
 */
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';`;

/** Interfaces are named `I` + the pydantic model's name (the lint rule for interfaces). */
function customName(schema, keyName) {
  const name = schema.title ?? keyName;
  if (name === undefined || schema.type !== 'object' || !schema.properties) {
    return undefined;
  }
  return `I${name}`;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of globalThis.process.stdin) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf-8');
}

const schema = JSON.parse(await readStdin());
const ts = await compile(schema, 'SkillnbContract', {
  bannerComment: BANNER,
  additionalProperties: false,
  customName,
  format: false,
  unreachableDefinitions: false
});
const target = new URL('../src/types.ts', import.meta.url).pathname;
const options = (await prettier.resolveConfig(target)) ?? {};
globalThis.process.stdout.write(
  await prettier.format(ts, { ...options, parser: 'typescript' })
);
