/**
 * cfn-lint (AWS's CloudFormation linter, a Python tool: `pip install cfn-lint`) on the synthesized
 * templates, when it is installed: errors fail, and each warning must be acknowledged below with
 * its reason, as cdk-nag findings are (NagSuppressions in infra/). Absent, the run says it skipped.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

interface Acknowledged {
  rule: string;
  /** Matches `<template file> <path in the template>` of the finding. */
  where: RegExp;
  reason: string;
}

/** Warnings Gantry accepts, with the reason; a new warning fails until it is fixed or listed here. */
export const ACKNOWLEDGED: readonly Acknowledged[] = [
  {
    rule: 'W3005',
    where: /\.template\.json Resources\/\w+\/DependsOn\//,
    reason:
      "CDK's Lambda and Step Functions constructs add the role to DependsOn (beside its default policy) so the policy exists before the first invocation; the duplicate dependency is harmless.",
  },
];

interface Finding {
  Level: string;
  Rule: { Id: string };
  Filename: string;
  Location: { Path: (string | number)[] };
  Message: string;
}

export interface CfnLintResult {
  /** Why it did not run (not installed), else undefined. */
  skipped?: string;
  version?: string;
  errors: string[];
  unacknowledged: string[];
  acknowledged: number;
}

const run = (args: string[]): Promise<{ stdout: string; code: number | string | null }> =>
  new Promise((resolve) => {
    execFile('cfn-lint', args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      resolve({ stdout, code: err ? ((err as NodeJS.ErrnoException).code ?? (err as { status?: number }).status ?? 1) : 0 });
    });
  });

export async function runCfnLint(cdkOut: string): Promise<CfnLintResult> {
  const version = await run(['--version']);
  if (version.code === 'ENOENT')
    return { skipped: 'cfn-lint is not installed (pip install cfn-lint): templates not linted', errors: [], unacknowledged: [], acknowledged: 0 };
  const templates = readdirSync(cdkOut)
    .filter((f) => f.endsWith('.template.json'))
    .map((f) => path.join(cdkOut, f));
  // Exit codes 2/4/8 flag errors/warnings/informational findings; the JSON says which.
  const { stdout } = await run(['--format', 'json', ...templates]);
  const findings = JSON.parse(stdout || '[]') as Finding[];
  const line = (f: Finding) => `${f.Rule.Id} ${path.basename(f.Filename)} ${f.Location.Path.join('/')}: ${f.Message}`;
  const errors = findings.filter((f) => f.Level === 'Error').map(line);
  const warnings = findings.filter((f) => f.Level === 'Warning');
  const isAcknowledged = (f: Finding) => ACKNOWLEDGED.some((a) => a.rule === f.Rule.Id && a.where.test(line(f)));
  return {
    version: version.stdout.trim(),
    errors,
    unacknowledged: warnings.filter((f) => !isAcknowledged(f)).map(line),
    acknowledged: warnings.filter(isAcknowledged).length,
  };
}
