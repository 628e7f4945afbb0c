import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
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
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'v1/openapi.json', raw: ['json'] });
}
