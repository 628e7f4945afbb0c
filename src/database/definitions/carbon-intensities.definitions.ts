import { defineFunction, defineTrigger, type Definition } from './definition';

/** Carbon intensities: no two periods of one cluster may overlap, whoever writes them. */
export const carbonIntensityDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_carbon_intensity_overlap_check() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (
        SELECT 1 FROM carbon_intensities a JOIN carbon_intensities b
          ON a.organization_id = b.organization_id AND a.cluster_id = b.cluster_id
         AND a.effective_from < b.effective_from
         AND (a.effective_to IS NULL OR a.effective_to > b.effective_from)
        WHERE a.organization_id IN (SELECT organization_id FROM new_rows)
      ) THEN
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
