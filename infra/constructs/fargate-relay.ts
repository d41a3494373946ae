/**
 * The Fargate realtime relay (`gantry:realtimeRelay=fargate`, docs/realtime.md): an ECS service on
 * arm64 running the project's container image with the relay's entry point
 * (lambdas/realtime/relay-main.ts), reached by API Gateway's WebSocket routes through a VPC link
 * and an internal Network Load Balancer. Each task holds the provider sockets of the sessions it
 * took at `$connect` and posts provider events through the stage's `@connections` API; a task that
 * gets a route for a session another task holds forwards it there (task to task on the relay port).
 *
 * Tasks run in public subnets with a public address and no NAT gateway (their only outbound
 * traffic is to providers and AWS APIs; nothing inbound but the relay port from inside the VPC), so
 * the idle cost is one task, the load balancer and two public addresses (README, "Cost").
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { VpcLink } from 'aws-cdk-lib/aws-apigateway';
import { CfnIntegration, CfnRoute, type WebSocketApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { ComparisonOperator, TreatMissingData, type Metric } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { FlowLogTrafficType, IpAddresses, Peer, Port, SecurityGroup, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Cluster, ContainerImage, CpuArchitecture, FargateService, FargateTaskDefinition, LogDrivers, OperatingSystemFamily } from 'aws-cdk-lib/aws-ecs';
import { NetworkLoadBalancer, NetworkTargetGroup, Protocol } from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { CONNECTION_ID_HEADER, DISCONNECT_CODE_HEADER, RELAY_PATHS } from '../../layers/core/src/gateway/realtime/relay-service.ts';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The relay's own VPC (a literal, so that its security group rule is checked at synth). */
const RELAY_VPC_CIDR = '10.60.0.0/16';
/** The relay's port on each task (and the load balancer's listener). */
export const RELAY_PORT = 8080;
/** One task: 0.5 vCPU and 1 GB, arm64 (the relay holds sockets and passes JSON; no audio is decoded). */
export const RELAY_CPU = 512;
export const RELAY_MEMORY_MB = 1024;
/** At least one task always runs (the idle cost); scaling adds tasks on CPU up to this many. */
export const RELAY_MIN_TASKS = 1;
export const RELAY_MAX_TASKS = 10;
/** ECS's grace between SIGTERM and SIGKILL: the relay tells its clients and settles its sessions within it. */
export const RELAY_STOP_TIMEOUT_SECONDS = 60;

export interface FargateRelayProps {
  readonly api: WebSocketApi;
  /** `https://<api>.execute-api.<region>.amazonaws.com/<stage>`: the `@connections` endpoint. */
  readonly connectionsEndpoint: string;
  /** The container's environment (table, key, queues, runtime settings). */
  readonly environment: Record<string, string>;
  readonly alarmTopic?: ITopic;
}

export class FargateRelay extends Construct {
  readonly service: FargateService;
  readonly taskDefinition: FargateTaskDefinition;
  readonly loadBalancer: NetworkLoadBalancer;
  readonly targetGroup: NetworkTargetGroup;
  readonly vpc: Vpc;

  constructor(scope: Construct, id: string, props: FargateRelayProps) {
    super(scope, id);
    this.vpc = new Vpc(this, 'Vpc', {
      ipAddresses: IpAddresses.cidr(RELAY_VPC_CIDR),
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: SubnetType.PUBLIC, cidrMask: 24 }],
      // Refused connections only: what a probe of the relay port looks like, for a few cents a month.
      flowLogs: { Rejected: { trafficType: FlowLogTrafficType.REJECT } },
    });
    const cluster = new Cluster(this, 'Cluster', { vpc: this.vpc });

    this.taskDefinition = new FargateTaskDefinition(this, 'Task', {
      cpu: RELAY_CPU,
      memoryLimitMiB: RELAY_MEMORY_MB,
      runtimePlatform: { cpuArchitecture: CpuArchitecture.ARM64, operatingSystemFamily: OperatingSystemFamily.LINUX },
    });
    const logs = new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
    this.taskDefinition.addContainer('relay', {
      // The project's image (Dockerfile), run with the relay's bundle instead of the local server.
      image: ContainerImage.fromAsset(ROOT, { file: 'Dockerfile', platform: Platform.LINUX_ARM64 }),
      command: ['node', '--enable-source-maps', 'dist/relay/main.mjs'],
      environment: {
        ...props.environment,
        PORT: String(RELAY_PORT),
        GW_CONNECTIONS_ENDPOINT: props.connectionsEndpoint,
        POWERTOOLS_SERVICE_NAME: 'gantry-realtime-relay',
        AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1',
      },
      portMappings: [{ containerPort: RELAY_PORT }],
      logging: LogDrivers.awsLogs({ logGroup: logs, streamPrefix: 'relay' }),
      stopTimeout: Duration.seconds(RELAY_STOP_TIMEOUT_SECONDS),
      readonlyRootFilesystem: true,
    });

    // The relay port from inside the VPC only: the load balancer's nodes and the other tasks.
    const tasks = new SecurityGroup(this, 'TaskSecurityGroup', { vpc: this.vpc, description: 'Realtime relay tasks: the relay port from inside the VPC' });
    tasks.addIngressRule(Peer.ipv4(RELAY_VPC_CIDR), Port.tcp(RELAY_PORT), 'API Gateway (through the VPC link and the load balancer) and the other relay tasks');
    this.service = new FargateService(this, 'Service', {
      cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: RELAY_MIN_TASKS,
      assignPublicIp: true,
      vpcSubnets: { subnetType: SubnetType.PUBLIC },
      securityGroups: [tasks],
      minHealthyPercent: 100,
      circuitBreaker: { enable: true, rollback: true },
    });
    const scaling = this.service.autoScaleTaskCount({ minCapacity: RELAY_MIN_TASKS, maxCapacity: RELAY_MAX_TASKS });
    // Scaling in stops a task, which ends its sessions (the clients reconnect): slowly.
    scaling.scaleOnCpuUtilization('Cpu', { targetUtilizationPercent: 60, scaleOutCooldown: Duration.minutes(1), scaleInCooldown: Duration.minutes(15) });
    scaling.scaleOnMemoryUtilization('Memory', { targetUtilizationPercent: 70, scaleOutCooldown: Duration.minutes(1), scaleInCooldown: Duration.minutes(15) });

    this.loadBalancer = new NetworkLoadBalancer(this, 'LoadBalancer', {
      vpc: this.vpc,
      internetFacing: false,
      crossZoneEnabled: true,
      vpcSubnets: { subnetType: SubnetType.PUBLIC },
    });
    const listener = this.loadBalancer.addListener('Relay', { port: RELAY_PORT, protocol: Protocol.TCP });
    this.targetGroup = listener.addTargets('Tasks', {
      port: RELAY_PORT,
      protocol: Protocol.TCP,
      targets: [this.service],
      // Each route is one short HTTP request: a stopping task needs no long draining.
      deregistrationDelay: Duration.seconds(30),
      healthCheck: { protocol: Protocol.HTTP, path: RELAY_PATHS.health, interval: Duration.seconds(10), healthyThresholdCount: 2, unhealthyThresholdCount: 2 },
    });

    this.routes(props.api);
    if (props.alarmTopic) this.alarms(props.alarmTopic);
    this.acknowledgeFindings(cluster);
  }

  private acknowledgeFindings(cluster: Cluster): void {
    Validations.of(cluster).acknowledge({
      id: 'AwsSolutions-ECS4',
      reason:
        'The service’s CPU and memory (AWS/ECS) and the load balancer’s healthy tasks are alarmed on; Container Insights would add per-task metrics at a monthly cost.',
    });
    Validations.of(this.taskDefinition).acknowledge({
      id: 'AwsSolutions-ECS2',
      reason: 'The environment holds names and addresses only (table, key ARN, queue URLs, the @connections endpoint, runtime settings); no secret.',
    });
    Validations.of(this.taskDefinition.obtainExecutionRole()).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken, which pulls the image, has no resource-level permission.',
    });
    Validations.of(this.loadBalancer).acknowledge({
      id: 'AwsSolutions-ELB2',
      reason:
        'Network Load Balancers write access logs for TLS listeners only; this one is a TCP listener inside the VPC. API Gateway’s stage keeps the access log of every route.',
    });
  }

  /** `$connect`, `$default` and `$disconnect` as HTTP requests to the load balancer through a VPC link. */
  private routes(api: WebSocketApi): void {
    const link = new VpcLink(this, 'VpcLink', { targets: [this.loadBalancer], description: 'API Gateway WebSocket routes to the realtime relay' });
    const route = (name: string, routeKey: string, relayPath: string, extra: Record<string, string> = {}) => {
      const integration = new CfnIntegration(this, `${name}Integration`, {
        apiId: api.apiId,
        integrationType: 'HTTP_PROXY',
        integrationMethod: 'POST',
        integrationUri: `http://${this.loadBalancer.loadBalancerDnsName}:${RELAY_PORT}${relayPath}`,
        connectionType: 'VPC_LINK',
        connectionId: link.vpcLinkId,
        // The connection id is not passed to an HTTP integration unless mapped.
        requestParameters: { [`integration.request.header.${CONNECTION_ID_HEADER}`]: 'context.connectionId', ...extra },
        timeoutInMillis: 29_000,
      });
      new CfnRoute(this, `${name}Route`, { apiId: api.apiId, routeKey, authorizationType: 'NONE', target: `integrations/${integration.ref}` });
    };
    route('Connect', '$connect', RELAY_PATHS.connect, { 'integration.request.querystring.model': 'route.request.querystring.model' });
    route('Default', '$default', RELAY_PATHS.message);
    route('Disconnect', '$disconnect', RELAY_PATHS.disconnect, { [`integration.request.header.${DISCONNECT_CODE_HEADER}`]: 'context.disconnectStatusCode' });
  }

  private alarms(topic: ITopic): void {
    // No data from the load balancer means no task answers; no CPU or memory data means no task runs (the first alarm's case).
    const alarm = (id: string, metric: Metric, threshold: number, comparisonOperator: ComparisonOperator, description: string) =>
      metric
        .createAlarm(this, id, {
          threshold,
          comparisonOperator,
          evaluationPeriods: 2,
          treatMissingData: comparisonOperator === ComparisonOperator.LESS_THAN_THRESHOLD ? TreatMissingData.BREACHING : TreatMissingData.NOT_BREACHING,
          alarmDescription: description,
        })
        .addAlarmAction(new SnsAction(topic));
    const period = Duration.minutes(1);
    alarm(
      'NoHealthyRelayTask',
      this.targetGroup.metrics.healthyHostCount({ period, statistic: 'Minimum' }),
      1,
      ComparisonOperator.LESS_THAN_THRESHOLD,
      'No healthy realtime relay task: new sessions are refused',
    );
    alarm(
      'RelayCpuHigh',
      this.service.metricCpuUtilization({ period, statistic: 'Average' }),
      85,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      'The realtime relay tasks run above 85% CPU (scaling is at its maximum or too slow)',
    );
    alarm(
      'RelayMemoryHigh',
      this.service.metricMemoryUtilization({ period, statistic: 'Average' }),
      85,
      ComparisonOperator.GREATER_THAN_THRESHOLD,
      'The realtime relay tasks use above 85% of their memory',
    );
  }
}
