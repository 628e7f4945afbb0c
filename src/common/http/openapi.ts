import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { API_VERSION } from '../../health/health.service';

/** Publishes the OpenAPI document at /v1/openapi.json and Swagger UI at /docs, both public. */
export function setupOpenApi(app: INestApplication): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('gpucap')
      .setDescription('GPU workloads, metrics and capacity budgets of an organization (read-only).')
      .setVersion(API_VERSION)
      .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'JWT or API token (gpucap_…)' })
      .addGlobalParameters({
        name: 'X-Organization-Id',
        in: 'header',
        required: true,
        description: 'The organization the request is about (not needed by /v1/health)',
        schema: { type: 'string' },
      })
      .addSecurityRequirements('bearer')
      .build(),
  );
  makeHealthPublic(document);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'v1/openapi.json', raw: ['json'] });
}

/** Health needs neither credentials nor the organization header; the document must say so. */
function makeHealthPublic(document: OpenAPIObject): void {
  const health = document.paths['/v1/health']?.get;
  if (!health) return;
  health.security = [];
  health.parameters = (health.parameters ?? []).filter(
    (parameter) => !('name' in parameter) || parameter.name !== 'X-Organization-Id',
  );
}
