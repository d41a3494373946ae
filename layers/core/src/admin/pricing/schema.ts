/** Request bodies of the custom pricing routes. Prices are USD per million tokens. */
import * as z from 'zod';

const price = z.number({ error: 'must be a number (USD per million tokens) or null' }).min(0, 'must be >= 0').max(1_000_000, 'must be <= 1000000').nullish();

export const putPriceSchema = z
  .object({
    input_per_million: price,
    output_per_million: price,
    cached_input_per_million: price,
    /** The workspace whose override this is (id or slug); also accepted as `?workspace_id=`. */
    workspace_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
  })
  .strict()
  .refine((b) => [b.input_per_million, b.output_per_million, b.cached_input_per_million].some((v) => typeof v === 'number'), {
    message: 'must set at least one of input_per_million, output_per_million, cached_input_per_million',
  });

export type PutPriceBody = z.output<typeof putPriceSchema>;
