import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { projectRoot } from '../../../src/core/project-root';
import { createTestApp, type TestApp } from '../../support/test-app';

/**
 * A generated client shows a field's description as its documentation: a property without one is a
 * field whose meaning a caller has to guess. Every property of every schema the service publishes,
 * nested objects and array items included, must say what it is.
 */
interface Schema {
  $ref?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
}

interface OpenApiDocument {
  paths: Record<
    string,
    Record<string, { responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> }>
  >;
  components: {
    schemas: Record<string, Schema>;
    responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  };
}

/** Where each property without a description is, as `Schema.property.nested` or `path….property`. */
function undescribedProperties(
  schema: Schema,
  where: string,
  found: string[],
  seen = new Set<Schema>(),
): void {
  if (seen.has(schema)) return;
  seen.add(schema);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const path = `${where}.${name}`;
    if (!hasDescription(property)) found.push(path);
    undescribedProperties(property, path, found, seen);
  }
  if (schema.items) undescribedProperties(schema.items, `${where}[]`, found, seen);
  if (typeof schema.additionalProperties === 'object')
    undescribedProperties(schema.additionalProperties, `${where}{}`, found, seen);
  for (const part of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])])
    undescribedProperties(part, where, found, seen);
}

/**
 * A description on the property itself; a bare `$ref` is described by the schema it names, whose own
 * properties are walked where that schema is listed.
 */
function hasDescription(property: Schema): boolean {
  if (typeof property.description === 'string' && property.description.trim().length > 0) return true;
  const parts = [...(property.allOf ?? []), ...(property.oneOf ?? []), ...(property.anyOf ?? [])];
  return parts.length > 0 && parts.every((part) => part.$ref === undefined && hasDescription(part));
}

describe('OpenAPI document: descriptions', () => {
  let testApp: TestApp;
  let document: OpenApiDocument;

  beforeAll(async () => {
    testApp = await createTestApp();
    const response = await request(testApp.server).get('/v1/openapi.json').expect(200);
    document = response.body as OpenApiDocument;
  });

  afterAll(async () => {
    await testApp.close();
  });

  it('describes every property of every schema, nested ones and array items included', () => {
    const found: string[] = [];
    for (const [name, schema] of Object.entries(document.components.schemas))
      undescribedProperties(schema, name, found);
    for (const [name, response] of Object.entries(document.components.responses ?? {}))
      for (const [type, content] of Object.entries(response.content ?? {}))
        if (content.schema) undescribedProperties(content.schema, `responses.${name} ${type}`, found);
    for (const [path, item] of Object.entries(document.paths))
      for (const [method, operation] of Object.entries(item))
        for (const [status, response] of Object.entries(operation.responses ?? {}))
          for (const [type, content] of Object.entries(response.content ?? {}))
            if (content.schema)
              undescribedProperties(
                content.schema,
                `${method.toUpperCase()} ${path} ${status} ${type}`,
                found,
              );
    expect(found).toEqual([]);
  });

  it('names every response property in the text of docs/api.md', () => {
    // Names inside inline code spans of the prose and tables (not in example blocks): `daily[]`,
    // `summary.total_gpu_hours`, `gpu_sharing`.
    const prose = readFileSync(join(projectRoot(), 'docs', 'api.md'), 'utf8').replace(/```[\s\S]*?```/g, '');
    const named = new Set(
      [...prose.matchAll(/`([^`\n]+)`/g)].flatMap((span) => span[1].match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []),
    );
    const missing = new Set<string>();
    const visit = (schema: Schema, where: string) => {
      for (const [name, property] of Object.entries(schema.properties ?? {})) {
        if (!named.has(name)) missing.add(`${where}.${name}`);
        visit(property, `${where}.${name}`);
      }
      if (schema.items) visit(schema.items, `${where}[]`);
      for (const part of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])])
        visit(part, where);
    };
    for (const [name, schema] of Object.entries(document.components.schemas)) visit(schema, name);
    expect([...missing]).toEqual([]);
  });

  it('has schemas to check', () => {
    expect(Object.keys(document.components.schemas).length).toBeGreaterThan(10);
    expect(document.components.schemas.CapacityReportDto.properties).toHaveProperty('timezone');
  });
});
