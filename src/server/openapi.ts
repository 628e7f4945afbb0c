import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { API_VERSION } from '../core/version';
import { completeOperations } from './openapi-errors';

const PUBLIC_PATHS = ['/v1/health', '/v1/health/live'];

/** Publishes the OpenAPI document at /v1/openapi.json and Swagger UI at /docs, both public. */
export function setupOpenApi(app: INestApplication): void {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('gpucap')
      .setDescription('GPU workloads, metrics and capacity budgets of an organization (read-only).')
      .setVersion(API_VERSION)
      .addServer('/', 'This service')
      .addBearerAuth(
        {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT or API token',
          description: 'A JWT (verified against the configured keys) or an API token (`gpucap_…`)',
        },
        'bearer',
      )
      .addSecurityRequirements('bearer')
      .build(),
  );
  document.info.license = { name: 'Proprietary' };
  makePublic(document);
  completeOperations(document, PUBLIC_PATHS);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'v1/openapi.json',
    raw: ['json'],
    swaggerOptions: { persistAuthorization: true },
  });
}

/** Health needs neither credentials nor the organization header; the document must say so. */
function makePublic(document: OpenAPIObject): void {
  for (const path of PUBLIC_PATHS) {
    const operation = document.paths[path]?.get;
    if (operation) operation.security = [];
  }
}
