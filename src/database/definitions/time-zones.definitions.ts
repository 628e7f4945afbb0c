import { defineFunction, type Definition } from './definition';

/** Time zones: only names PostgreSQL knows may be stored. */
export const timeZoneDefinitions: Definition[] = [
  defineFunction(`
    CREATE OR REPLACE FUNCTION gpucap_known_time_zone(zone text) RETURNS text LANGUAGE plpgsql STABLE AS $$
    BEGIN
      PERFORM now() AT TIME ZONE zone;
      RETURN zone;
    EXCEPTION WHEN invalid_parameter_value THEN
      RETURN 'UTC';
    END
    $$`),
];
