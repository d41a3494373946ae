/**
 * The first deployment's organisation, `default` workspace and owner admin key: a custom resource
 * backed by the bootstrap function (lambdas/bootstrap/handler.ts), which runs the core's
 * `bootstrapDeployment` and puts the key into a secret of its own. Only the secret's name is an
 * output. Later deployments change nothing, so a rotated key stays rotated.
 */
import { CfnOutput, CustomResource, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { grantItemAccess } from '../stacks/data-stack.ts';
import { WorkerFunction } from './worker-function.ts';

export const BOOTSTRAP_ENTRY = 'lambdas/bootstrap/handler.ts';
export const BOOTSTRAP_RESOURCE_TYPE = 'Custom::GantryBootstrap';

export interface BootstrapProps {
  readonly table: ITable;
  readonly memorySize: number;
}

export class Bootstrap extends Construct {
  readonly fn: LambdaFunction;
  readonly secret: Secret;
  readonly resource: CustomResource;

  constructor(scope: Construct, id: string, props: BootstrapProps) {
    super(scope, id);
    this.secret = new Secret(this, 'AdminKey', {
      description: 'Gantry: the organisation owner admin key, written once by the bootstrap resource',
      // The key opens the retained table: it outlives the stack like the table does.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const worker = new WorkerFunction(this, 'Worker', {
      entry: BOOTSTRAP_ENTRY,
      service: 'gantry-bootstrap',
      timeout: Duration.minutes(1),
      memorySize: props.memorySize,
      environment: { TABLE_NAME: props.table.tableName },
    });
    this.fn = worker.fn;
    grantItemAccess(props.table, this.fn);
    // Writing the key is all it may do with the secret: it never reads it back.
    this.fn.addToRolePolicy(new PolicyStatement({ actions: ['secretsmanager:PutSecretValue'], resources: [this.secret.secretArn] }));
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: this.fn.functionArn,
      resourceType: BOOTSTRAP_RESOURCE_TYPE,
      properties: { AdminKeySecretId: this.secret.secretArn },
    });
    // The permission must exist before CloudFormation invokes the function.
    this.resource.node.addDependency(this.fn.role!);
    const output = new CfnOutput(this, 'AdminKeySecretName', {
      value: this.secret.secretName,
      description: 'The Secrets Manager secret holding the owner admin key (read it with aws secretsmanager get-secret-value)',
    });
    // A readable output name: `aws cloudformation describe-stacks` shows it as is.
    output.overrideLogicalId('AdminKeySecretName');

    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The value is a Gantry API key: it is rotated through the admin API (POST /v1/api-keys/{id}/rotate) and the new key put into the secret, as docs/deploy.md describes; a Secrets Manager rotation function cannot rotate it.',
    });
    Validations.of(this.fn).acknowledge(
      {
        id: 'Serverless-LambdaDLQ',
        reason: 'Invoked by CloudFormation for the custom resource; every outcome, failures included, is reported to CloudFormation on the response URL.',
      },
      {
        id: 'Serverless-LambdaAsyncFailureDestination',
        reason: 'Invoked by CloudFormation for the custom resource; a failure fails the deployment, which is where it must be seen.',
      },
    );
  }
}
