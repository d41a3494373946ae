/**
 * The synthesized app as CloudFormation would see it in a sample account and region: templates read
 * from the cloud assembly (cdk.out), every intrinsic (Ref, Fn::GetAtt, Fn::ImportValue,
 * Fn::GetStackOutput, Fn::Join, Fn::Sub, Fn::Select, Fn::Split) resolved to the physical names a
 * deployment would give its resources (generated names carry a run suffix, so parallel runs never
 * share a table), and the functions with their code, environment, role policies and triggers.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export interface Resource {
  Type: string;
  Properties?: Record<string, Json>;
  Metadata?: Record<string, Json>;
}
export interface Template {
  Resources: Record<string, Resource>;
  Outputs?: Record<string, { Value: Json; Export?: { Name: Json } }>;
}
export interface Stack {
  name: string;
  template: Template;
}

export interface PolicyStatement {
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: Json;
  Condition?: Json;
}

/** One policy document attached to a function's role, named for the messages. */
export interface RolePolicy {
  /** `Stack/LogicalId` of the AWS::IAM::Policy, or `Stack/RoleLogicalId#PolicyName` for an inline one. */
  name: string;
  statements: PolicyStatement[];
}

export interface SynthFunction {
  /** `Stack/LogicalId`. */
  id: string;
  stack: string;
  logicalId: string;
  /** The name Lambda would give it (`<stack>-<logicalId>`), also in its ARN. */
  functionName: string;
  runtime: string;
  handler: string;
  /** The asset directory inside the assembly. */
  codeDir: string;
  memoryMb: number;
  timeoutMs: number;
  /** The template's variables, resolved. */
  environment: Record<string, string>;
  roleName: string;
  policies: RolePolicy[];
  /** Managed policy ARNs on the role (not evaluated: named in the report). */
  managedPolicies: string[];
  /** What invokes it: `sqs:<queue name>`, `schedule`, `custom-resource:<type>`, `rest-api`, `websocket-api`, `state-machine`. */
  triggers: string[];
}

/** A state machine of the app: its definition with every intrinsic resolved, and its role's policies. */
export interface SynthStateMachine {
  /** `Stack/LogicalId`. */
  id: string;
  arn: string;
  /** The Amazon States Language definition, parsed. */
  definition: Json;
  roleName: string;
  policies: RolePolicy[];
}

const asList = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export class Assembly {
  readonly dir: string;
  readonly stacks = new Map<string, Stack>();
  readonly #suffix: string;

  /** `suffix` goes into every generated physical name (tables, queues, buckets). */
  constructor(dir: string, suffix: string, stacks?: Stack[]) {
    this.dir = dir;
    this.#suffix = suffix;
    for (const s of stacks ?? readStacks(dir)) this.stacks.set(s.name, s);
  }

  /** A copy with one stack's template replaced (what a test mutates). */
  withTemplate(stack: string, template: Template): Assembly {
    return new Assembly(
      this.dir,
      this.#suffix,
      [...this.stacks.values()].map((s) => (s.name === stack ? { name: stack, template } : s)),
    );
  }

  resource(stack: string, logicalId: string): Resource {
    const r = this.stacks.get(stack)?.template.Resources[logicalId];
    if (!r) throw new Error(`${stack} has no resource ${logicalId}`);
    return r;
  }

  /** The physical name CloudFormation would give a resource (its own name property, else generated). */
  physicalName(stack: string, logicalId: string): string {
    const r = this.resource(stack, logicalId);
    const p = r.Properties ?? {};
    const own = (key: string) => (p[key] === undefined ? undefined : this.resolveString(p[key], stack));
    const generated = `${stack}-${logicalId}-${this.#suffix}`;
    switch (r.Type) {
      case 'AWS::DynamoDB::Table':
        return own('TableName') ?? generated;
      case 'AWS::SQS::Queue':
        return own('QueueName') ?? generated;
      case 'AWS::S3::Bucket':
        return own('BucketName') ?? generated.toLowerCase();
      case 'AWS::SecretsManager::Secret':
        return own('Name') ?? `${logicalId}-${this.#suffix}`;
      case 'AWS::StepFunctions::StateMachine':
        return own('StateMachineName') ?? generated;
      case 'AWS::IAM::Role':
        return own('RoleName') ?? generated;
      case 'AWS::Lambda::Function':
        return own('FunctionName') ?? `${stack}-${logicalId}`;
      case 'AWS::Logs::LogGroup':
        return own('LogGroupName') ?? generated;
      default:
        return generated;
    }
  }

  /** What `Ref` returns for a resource, by type (CloudFormation's documented return values). */
  ref(stack: string, logicalId: string): string {
    const pseudo: Record<string, string> = {
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::Partition': 'aws',
      'AWS::URLSuffix': 'amazonaws.com',
      'AWS::StackName': stack,
      'AWS::StackId': `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${stack}/rehearsal`,
    };
    if (pseudo[logicalId]) return pseudo[logicalId];
    const r = this.resource(stack, logicalId);
    const name = this.physicalName(stack, logicalId);
    switch (r.Type) {
      case 'AWS::SQS::Queue':
        return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
      case 'AWS::SecretsManager::Secret':
        return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`;
      case 'AWS::StepFunctions::StateMachine':
        return `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`;
      case 'AWS::KMS::Key':
        return `${logicalId.toLowerCase().slice(0, 8).padEnd(8, '0')}-0000-4000-8000-${this.#suffix.padEnd(12, '0').slice(0, 12)}`;
      case 'AWS::ApiGateway::RestApi':
      case 'AWS::ApiGatewayV2::Api':
        return `${logicalId.toLowerCase().slice(0, 10)}`;
      case 'AWS::ApiGateway::Stage':
        return this.resolveString(r.Properties?.StageName ?? 'prod', stack);
      default:
        return name;
    }
  }

  getAtt(stack: string, logicalId: string, attr: string): string {
    const r = this.resource(stack, logicalId);
    const name = this.physicalName(stack, logicalId);
    const arns: Record<string, string> = {
      'AWS::DynamoDB::Table': `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`,
      'AWS::SQS::Queue': `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`,
      'AWS::S3::Bucket': `arn:aws:s3:::${name}`,
      'AWS::KMS::Key': `arn:aws:kms:${REGION}:${ACCOUNT}:key/${this.ref(stack, logicalId)}`,
      'AWS::IAM::Role': `arn:aws:iam::${ACCOUNT}:role/${name}`,
      'AWS::Lambda::Function': `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}`,
      'AWS::Logs::LogGroup': `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${name}:*`,
      'AWS::SNS::Topic': `arn:aws:sns:${REGION}:${ACCOUNT}:${name}`,
      'AWS::StepFunctions::StateMachine': this.ref(stack, logicalId),
      'AWS::SecretsManager::Secret': this.ref(stack, logicalId),
    };
    if (attr === 'Arn' && arns[r.Type]) return arns[r.Type]!;
    if (attr === 'QueueName' || attr === 'Name') return name;
    if (attr === 'QueueUrl') return this.ref(stack, logicalId);
    if (attr === 'KeyId') return this.ref(stack, logicalId);
    return `${name}.${attr}`;
  }

  /** Resolves every intrinsic in `value`, as CloudFormation would in `stack`. */
  resolve(value: Json, stack: string): Json {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v, stack));
    if (value === null || typeof value !== 'object') return value;
    const keys = Object.keys(value);
    if (keys.length !== 1 || !(keys[0] === 'Ref' || keys[0]!.startsWith('Fn::'))) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.resolve(v, stack)]));
    }
    const fn = keys[0]!;
    const arg = value[fn] as Json;
    const str = (v: Json) => this.resolveString(v, stack);
    switch (fn) {
      case 'Ref':
        return this.ref(stack, String(arg));
      case 'Fn::GetAtt': {
        const [id, ...attr] = Array.isArray(arg) ? (arg as string[]) : String(arg).split('.');
        return this.getAtt(stack, String(id), attr.join('.'));
      }
      case 'Fn::Join': {
        const [sep, parts] = arg as [string, Json[]];
        return asList(this.resolve(parts as Json, stack) as Json[]).join(sep);
      }
      case 'Fn::Select': {
        const [i, list] = arg as [Json, Json];
        return (this.resolve(list, stack) as Json[])[Number(str(i))] ?? null;
      }
      case 'Fn::Split': {
        const [sep, s] = arg as [string, Json];
        return str(s).split(sep);
      }
      case 'Fn::Sub': {
        const [template, vars] = Array.isArray(arg) ? (arg as [string, Record<string, Json>]) : [String(arg), {}];
        return template.replace(/\$\{([^}!][^}]*)\}/g, (_, name: string) => {
          if (vars[name] !== undefined) return str(vars[name]);
          const [id, ...attr] = name.split('.');
          return attr.length ? this.getAtt(stack, id!, attr.join('.')) : this.ref(stack, id!);
        });
      }
      case 'Fn::ImportValue':
        return this.importValue(str(arg));
      case 'Fn::GetStackOutput': {
        const a = arg as { StackName: Json; OutputName: Json };
        return this.output(str(a.StackName), str(a.OutputName));
      }
      case 'Fn::Base64':
        return Buffer.from(str(arg)).toString('base64');
      default:
        throw new Error(`the rehearsal cannot resolve ${fn} (in ${stack})`);
    }
  }

  resolveString(value: Json, stack: string): string {
    const v = this.resolve(value, stack);
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') throw new Error(`${JSON.stringify(value)} in ${stack} is not a string`);
    return String(v);
  }

  importValue(exportName: string): string {
    for (const s of this.stacks.values()) {
      for (const o of Object.values(s.template.Outputs ?? {})) {
        if (o.Export && this.resolveString(o.Export.Name, s.name) === exportName) return this.resolveString(o.Value, s.name);
      }
    }
    throw new Error(`no stack exports ${exportName}`);
  }

  output(stack: string, name: string): string {
    const o = this.stacks.get(stack)?.template.Outputs?.[name];
    if (!o) throw new Error(`${stack} has no output ${name}`);
    return this.resolveString(o.Value, stack);
  }

  /** Every function of the app, Node ones first; `runtime` tells the others apart. */
  functions(): SynthFunction[] {
    const out: SynthFunction[] = [];
    for (const s of this.stacks.values()) {
      for (const [logicalId, r] of Object.entries(s.template.Resources)) {
        if (r.Type !== 'AWS::Lambda::Function') continue;
        out.push(this.#function(s.name, logicalId, r));
      }
    }
    return out;
  }

  /** Every AWS::StepFunctions::StateMachine (DefinitionString, or Definition with DefinitionSubstitutions). */
  stateMachines(): SynthStateMachine[] {
    const out: SynthStateMachine[] = [];
    for (const s of this.stacks.values()) {
      for (const [logicalId, r] of Object.entries(s.template.Resources)) {
        if (r.Type !== 'AWS::StepFunctions::StateMachine') continue;
        const p = r.Properties ?? {};
        const subs = Object.entries((this.resolve(p.DefinitionSubstitutions ?? {}, s.name) ?? {}) as Record<string, Json>);
        let text = p.DefinitionString !== undefined ? this.resolveString(p.DefinitionString, s.name) : JSON.stringify(this.resolve(p.Definition ?? {}, s.name));
        for (const [k, v] of subs) text = text.replaceAll(`\${${k}}`, String(v));
        const roleName =
          this.resolveString(p.RoleArn ?? '', s.name)
            .split('/')
            .at(-1) ?? '';
        out.push({
          id: `${s.name}/${logicalId}`,
          arn: this.ref(s.name, logicalId),
          definition: JSON.parse(text) as Json,
          roleName,
          policies: this.#rolePolicies(roleName).policies,
        });
      }
    }
    return out;
  }

  #function(stack: string, logicalId: string, r: Resource): SynthFunction {
    const p = r.Properties ?? {};
    const env = ((p.Environment as { Variables?: Record<string, Json> } | undefined)?.Variables ?? {}) as Record<string, Json>;
    const roleArn = this.resolveString(p.Role ?? '', stack);
    const roleName = roleArn.split('/').at(-1) ?? '';
    const functionArn = this.getAtt(stack, logicalId, 'Arn');
    return {
      id: `${stack}/${logicalId}`,
      stack,
      logicalId,
      functionName: this.physicalName(stack, logicalId),
      runtime: String(p.Runtime ?? ''),
      handler: String(p.Handler ?? ''),
      codeDir: path.join(this.dir, String(r.Metadata?.['aws:asset:path'] ?? '')),
      memoryMb: Number(p.MemorySize ?? 128),
      timeoutMs: Number(p.Timeout ?? 3) * 1000,
      environment: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, this.resolveString(v, stack)])),
      roleName,
      ...this.#rolePolicies(roleName),
      triggers: this.#triggers(functionArn),
    };
  }

  /** The policies attached to a role: AWS::IAM::Policy resources in any stack naming it, and its inline ones. */
  #rolePolicies(roleName: string): { policies: RolePolicy[]; managedPolicies: string[] } {
    const policies: RolePolicy[] = [];
    const managedPolicies: string[] = [];
    for (const s of this.stacks.values()) {
      for (const [id, r] of Object.entries(s.template.Resources)) {
        const p = r.Properties ?? {};
        if (r.Type === 'AWS::IAM::Policy' && asList(p.Roles as Json[]).some((role) => this.resolveString(role, s.name) === roleName)) {
          policies.push({ name: `${s.name}/${id}`, statements: this.#statements(p.PolicyDocument, s.name) });
        }
        if (r.Type === 'AWS::IAM::Role' && this.physicalName(s.name, id) === roleName) {
          for (const inline of asList(p.Policies as Json[]) as { PolicyName: Json; PolicyDocument: Json }[]) {
            policies.push({
              name: `${s.name}/${id}#${this.resolveString(inline.PolicyName, s.name)}`,
              statements: this.#statements(inline.PolicyDocument, s.name),
            });
          }
          for (const arn of asList(p.ManagedPolicyArns as Json[])) managedPolicies.push(this.resolveString(arn, s.name));
        }
      }
    }
    return { policies, managedPolicies };
  }

  #statements(doc: Json | undefined, stack: string): PolicyStatement[] {
    const resolved = this.resolve(doc ?? {}, stack) as { Statement?: PolicyStatement | PolicyStatement[] };
    return asList(resolved.Statement);
  }

  /** The trigger kinds that invoke the function with this ARN, from the resources that name it. */
  #triggers(functionArn: string): string[] {
    const found = new Set<string>();
    for (const s of this.stacks.values()) {
      for (const [id, r] of Object.entries(s.template.Resources)) {
        const p = r.Properties ?? {};
        const names = (v: Json | undefined) => v !== undefined && this.#mentions(this.resolve(v, s.name), functionArn);
        if (r.Type === 'AWS::Lambda::EventSourceMapping' && names(p.FunctionName)) {
          found.add(
            `sqs:${this.resolveString(p.EventSourceArn ?? '', s.name)
              .split(':')
              .at(-1)}`,
          );
        } else if ((r.Type === 'AWS::Scheduler::Schedule' || r.Type === 'AWS::Events::Rule') && names(p.Target ?? p.Targets)) found.add('schedule');
        else if ((r.Type.startsWith('Custom::') || r.Type === 'AWS::CloudFormation::CustomResource') && names(p.ServiceToken))
          found.add(`custom-resource:${r.Type}`);
        else if (r.Type === 'AWS::StepFunctions::StateMachine' && names(p.DefinitionString)) found.add('state-machine');
        else if (r.Type === 'AWS::Lambda::Permission' && names(p.FunctionName) && p.Principal === 'apigateway.amazonaws.com') {
          const api = this.resource(s.name, this.#apiOf(p.SourceArn) ?? id).Type;
          found.add(api === 'AWS::ApiGatewayV2::Api' ? 'websocket-api' : 'rest-api');
        }
      }
    }
    return [...found].sort();
  }

  /** The API a permission's SourceArn names (`{Ref: Api}` inside its Fn::Join). */
  #apiOf(sourceArn: Json | undefined): string | undefined {
    const m = /"Ref":"([A-Za-z0-9]+)"/.exec(JSON.stringify(sourceArn ?? '').replace(/"Ref":"AWS::[A-Za-z]+"/g, ''));
    return m?.[1];
  }

  #mentions(value: Json, arn: string): boolean {
    const name = arn.split(':').at(-1)!;
    return JSON.stringify(value).includes(arn) || JSON.stringify(value) === JSON.stringify(name);
  }
}

function readStacks(dir: string): Stack[] {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; properties?: { templateFile?: string; stackName?: string } }>;
  };
  return Object.entries(manifest.artifacts)
    .filter(([, a]) => a.type === 'aws:cloudformation:stack' && a.properties?.templateFile)
    .map(([id, a]) => ({
      name: a.properties?.stackName ?? id,
      template: JSON.parse(readFileSync(path.join(dir, a.properties!.templateFile!), 'utf8')) as Template,
    }));
}
