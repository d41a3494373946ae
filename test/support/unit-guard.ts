/** In the unit lane, a test file that starts DynamoDB Local itself (Java) fails with where it belongs. */
import { vi } from 'vitest';
import { UNIT_LANE_DYNAMODB } from './unit-setup.ts';

vi.mock(import('../../lambdas/local/dynamodb-local.ts'), async (original) => ({
  ...(await original()),
  startDynamoDBLocal: () => Promise.reject(new Error(UNIT_LANE_DYNAMODB)),
}));
