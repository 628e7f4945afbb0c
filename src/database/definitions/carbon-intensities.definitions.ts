import { defineFunction, defineTrigger, type Definition } from './definition';
import { overlappingPeriodsSql } from './period-overlap';

/** Carbon intensities: no two periods of one cluster may overlap, whoever writes them. */
export const carbonIntensityDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_carbon_intensity_overlap_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF ${overlappingPeriodsSql('carbon_intensities', 'cluster_id')} THEN
        RAISE EXCEPTION 'carbon intensity periods of one cluster overlap' USING ERRCODE = '23P01';
      END IF;
      RETURN NULL;
    END
    $$`),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER carbon_intensities_overlap_insert AFTER INSERT ON carbon_intensities REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_carbon_intensity_overlap_check()',
  ),
  defineTrigger(
    'CREATE OR REPLACE TRIGGER carbon_intensities_overlap_update AFTER UPDATE ON carbon_intensities REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION gpucap_carbon_intensity_overlap_check()',
  ),
];
