import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption, type ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
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

/** The single DynamoDB table, built from the same declaration DynamoDB Local is created from. */
export class DataStack extends Stack {
  readonly table: Table;

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
  }
}
