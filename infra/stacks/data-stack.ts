import { Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { BlockPublicAccess, Bucket, BucketEncryption, type IBucket } from 'aws-cdk-lib/aws-s3';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Key, type IKey } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import { TABLE, type KeyAttribute, type KeyType, type TableDeclaration } from '../../layers/core/src/store/table.ts';

const ATTRIBUTE_TYPES: Readonly<Record<KeyType, AttributeType>> = {
  S: AttributeType.STRING,
  N: AttributeType.NUMBER,
  B: AttributeType.BINARY,
};

function attribute(key: KeyAttribute): { name: string; type: AttributeType } {
  return { name: key.name, type: ATTRIBUTE_TYPES[key.type] };
}

/**
 * Item-level actions the functions use. Transactions need no actions of their own beyond these.
 * Deliberately absent: Scan (the single-table design queries keys and indexes), the control plane
 * (DescribeTable, ...) and streams.
 */
export const ITEM_ACTIONS: readonly string[] = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
];

/**
 * Grants ITEM_ACTIONS on the table and on each declared index by name. Unlike
 * `grantReadWriteData` this names no `index/*` wildcard, so a new index is granted when it is
 * declared, and nothing else is.
 */
export function grantItemAccess(table: ITable, grantee: IGrantable, decl: TableDeclaration = TABLE): Grant {
  return Grant.addToPrincipal({
    grantee,
    actions: [...ITEM_ACTIONS],
    resourceArns: [table.tableArn, ...decl.globalIndexes.map((i) => `${table.tableArn}/index/${i.name}`)],
  });
}

export interface DataStackProps extends StackProps {
  /** The table declaration to build; the service's own unless a test supplies another. */
  readonly declaration?: TableDeclaration;
}

/** Objects under `cache/` (large cached responses) outlive no cache entry by more than this. */
export const CACHE_OBJECT_DAYS = 31;

/**
 * Grants object read, write and delete under the bucket (no listing, no bucket configuration).
 */
export function grantObjectAccess(bucket: IBucket, grantee: IGrantable): Grant {
  const grant = Grant.addToPrincipal({
    grantee,
    actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
    resourceArns: [bucket.arnForObjects('*')],
  });
  return grant;
}

/**
 * KMS actions on the credentials key: the gateway only decrypts data keys; the admin function also
 * generates them (each stored credential is encrypted under a fresh one). No wildcard actions.
 */
export const CREDENTIALS_DECRYPT: readonly string[] = ['kms:Decrypt'];
export const CREDENTIALS_ENCRYPT_DECRYPT: readonly string[] = ['kms:Decrypt', 'kms:GenerateDataKey'];

export function grantCredentialsKey(key: IKey, grantee: IGrantable, actions: readonly string[]): Grant {
  return Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns: [key.keyArn] });
}

/** The single DynamoDB table, built from the same declaration DynamoDB Local is created from, and the blob bucket. */
export class DataStack extends Stack {
  readonly table: Table;
  /** Large bodies: cached responses, files, batch input and output, log exports. */
  readonly blobs: Bucket;
  /** Envelope encryption of provider credentials kept in the table. */
  readonly credentialsKey: Key;

  constructor(scope: Construct, id: string, props: DataStackProps = {}) {
    super(scope, id, props);
    const decl = props.declaration ?? TABLE;

    this.table = new Table(this, 'Table', {
      partitionKey: attribute(decl.partitionKey),
      sortKey: attribute(decl.sortKey),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: decl.ttlAttribute,
      // Keys, configs and logs outlive any one deployment: deleting the stack must not delete them.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of decl.globalIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        projectionType: ProjectionType.ALL,
      });
    }

    this.blobs = new Bucket(this, 'Blobs', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      removalPolicy: RemovalPolicy.RETAIN,
      // DynamoDB's TTL removes cache entries but not their bodies here: expire those on their own.
      lifecycleRules: [{ id: 'expire-cache-bodies', prefix: 'cache/', expiration: Duration.days(CACHE_OBJECT_DAYS) }],
    });
    this.credentialsKey = new Key(this, 'CredentialsKey', {
      description: 'Gantry: envelope encryption of provider credentials stored in the table',
      enableKeyRotation: true,
      // Without the key the stored credentials are lost: it outlives the stack like the table.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    Validations.of(this.blobs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'Object access is through the functions only, which log every request; server access logs would mostly record those calls again.',
    });
  }
}
