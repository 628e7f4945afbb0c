import { defineFunction, defineTrigger, type Definition } from './definition';
import { overlappingPeriodsSql } from './period-overlap';

/** Prices: no two periods of one instance type and pricing category may overlap. */
export const priceDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_price_overlap_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF ${overlappingPeriodsSql('gpu_prices', 'instance_type')} THEN
        RAISE EXCEPTION 'price periods of one instance type overlap' USING ERRCODE = '23P01';
      END IF;
      IF EXISTS (
        SELECT 1 FROM gpu_prices WHERE organization_id IN (SELECT organization_id FROM new_rows)
        GROUP BY organization_id HAVING count(DISTINCT currency) > 1
      ) THEN
        RAISE EXCEPTION 'an organization prices in one currency' USING ERRCODE = '23514';
      END IF;
      RETURN NULL;
    END
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER gpu_prices_overlap_insert AFTER INSERT ON gpu_prices REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_price_overlap_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER gpu_prices_overlap_update AFTER UPDATE ON gpu_prices REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_price_overlap_check()',
  ),
];
