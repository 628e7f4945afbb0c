import type { OpenAPIObject } from '@nestjs/swagger';
import type {
  HeaderObject,
  OperationObject,
  ParameterObject,
  ReferenceObject,
  ResponseObject,
} from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import { ErrorCode, HTTP_STATUS_OF } from '../common/http/error-codes';

/**
 * What the decorators cannot say once per document: the one error envelope every operation can
 * answer with, the headers those answers carry, and the organization header as one shared parameter.
 * Without them a generated client types every error as `never`.
 */
export function completeOperations(document: OpenAPIObject, publicPaths: readonly string[]): void {
  addSharedComponents(document);
  for (const [path, item] of Object.entries(document.paths)) {
    const isPublic = publicPaths.includes(path);
    for (const operation of [item.get, item.head].filter((op): op is OperationObject => !!op)) {
      operation.parameters = withOrganizationParameter(operation.parameters ?? [], isPublic);
      operation.responses = { ...errorResponsesFor(isPublic), ...operation.responses };
      if (!isPublic) addConditionalRequests(operation);
      for (const response of Object.values(operation.responses)) addRequestIdHeader(response);
    }
  }
}

const ORGANIZATION_HEADER = 'X-Organization-Id';

/**
 * Public routes (health) need no credentials, so they answer neither 401, 403 nor 429; readiness
 * declares its own 503 in the health shape, and liveness reads no dependency.
 */
const PUBLIC_ERROR_CODES: readonly ErrorCode[] = [
  ErrorCode.VALIDATION_ERROR,
  ErrorCode.NOT_FOUND,
  ErrorCode.METHOD_NOT_ALLOWED,
  ErrorCode.INTERNAL_ERROR,
];

const RESPONSE_DESCRIPTIONS: Record<ErrorCode, string> = {
  [ErrorCode.VALIDATION_ERROR]:
    'A parameter or header is missing, malformed, out of range, unknown or conflicts with another',
  [ErrorCode.UNAUTHENTICATED]:
    'No bearer token, or one that is malformed, expired, wrongly signed or revoked',
  [ErrorCode.FORBIDDEN]: 'The organization or an initiative named in a filter is outside your access',
  [ErrorCode.NOT_FOUND]: 'Unknown path, or a workload that does not exist or is outside your access',
  [ErrorCode.METHOD_NOT_ALLOWED]: 'Only GET, HEAD and OPTIONS are served',
  [ErrorCode.RATE_LIMITED]: 'Over the request rate of your credential or address',
  [ErrorCode.INTERNAL_ERROR]: 'Something unexpected; logged with the request id',
  [ErrorCode.SERVICE_UNAVAILABLE]: 'The database cannot be reached; retry after the given seconds',
};

const HEADERS_OF: Partial<Record<ErrorCode, string[]>> = {
  [ErrorCode.UNAUTHENTICATED]: ['WWW-Authenticate'],
  [ErrorCode.METHOD_NOT_ALLOWED]: ['Allow'],
  [ErrorCode.RATE_LIMITED]: ['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
  [ErrorCode.SERVICE_UNAVAILABLE]: ['Retry-After'],
};

const HEADERS: Record<string, HeaderObject> = {
  'X-Request-Id': {
    description: 'The caller’s X-Request-Id when it is 1 to 128 printable ASCII characters, else a new UUID',
    schema: { type: 'string' },
  },
  'WWW-Authenticate': { description: 'Always `Bearer`', schema: { type: 'string', example: 'Bearer' } },
  Allow: { description: 'The methods served', schema: { type: 'string', example: 'GET, HEAD' } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } },
  'RateLimit-Limit': { description: 'Requests allowed per window', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in this window', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window resets', schema: { type: 'integer' } },
  ETag: {
    description:
      'Names this answer (data version, your scope and query, as_of); send it back as If-None-Match for a 304',
    schema: { type: 'string', example: 'W/"Zk3n0f5w8c1Jq2mXbA7yH4tL9sPeR6uD"' },
  },
  'X-Data-As-Of': {
    description:
      'Every write before this instant is in the data the answer was computed from (`metadata.data_as_of`; on a CSV export too): earlier than now when a streaming replica served it',
    schema: { type: 'string', format: 'date-time' },
  },
  'Cache-Control': {
    description: '`private, max-age=<seconds this answer stays valid>` (JSON answers)',
    schema: { type: 'string', example: 'private, max-age=10' },
  },
};

function addSharedComponents(document: OpenAPIObject): void {
  const components = (document.components ??= {});
  components.headers = { ...components.headers, ...HEADERS };
  components.parameters = {
    ...components.parameters,
    OrganizationId: {
      name: ORGANIZATION_HEADER,
      in: 'header',
      required: true,
      description: 'The organization the request is about',
      schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
      // Swagger UI pre-fills it: the organization `npm start` creates.
      example: 'org-demo',
    },
  };
  components.schemas = {
    ...components.schemas,
    ErrorDetail: {
      type: 'object',
      required: ['field', 'location', 'issue'],
      properties: {
        field: { type: 'string', example: 'limit', description: 'The parameter or header at fault' },
        location: {
          type: 'string',
          enum: ['query', 'path', 'header'],
          description: 'Where that field was sent',
        },
        issue: {
          type: 'string',
          example: 'must be an integer from 1 to 100',
          description: 'The rule it broke',
        },
        value: { type: 'string', description: 'The offending value (left out for secrets)', example: '0' },
      },
    },
    ErrorEnvelope: {
      type: 'object',
      required: ['error', 'request_id'],
      properties: {
        error: {
          type: 'object',
          description: 'What went wrong',
          required: ['code', 'message', 'details'],
          properties: {
            code: {
              type: 'string',
              enum: Object.values(ErrorCode),
              description: 'A stable code for programs',
            },
            message: { type: 'string', description: 'A sentence for people' },
            details: {
              type: 'array',
              items: { $ref: '#/components/schemas/ErrorDetail' },
              description: 'Every offending field (empty when the error is not about one)',
            },
          },
        },
        request_id: {
          type: 'string',
          description: 'Names the request in the service logs; also the X-Request-Id header',
        },
      },
    },
  };
  components.parameters.IfNoneMatch = {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'The ETag of an answer you hold: 304 while it is still the answer',
    schema: { type: 'string' },
  };
  components.responses = {
    ...components.responses,
    ...errorResponseComponents(),
    NotModified: {
      description: 'The answer named by If-None-Match is still valid: no body',
      headers: {
        ETag: { $ref: '#/components/headers/ETag' },
        'Cache-Control': { $ref: '#/components/headers/Cache-Control' },
        'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
      },
    },
  };
}

function errorResponseComponents(): Record<string, ResponseObject> {
  const responses: Record<string, ResponseObject> = {};
  for (const code of Object.values(ErrorCode)) {
    const headers: Record<string, ReferenceObject> = {
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
    };
    for (const name of HEADERS_OF[code] ?? []) headers[name] = { $ref: `#/components/headers/${name}` };
    responses[code] = {
      description: RESPONSE_DESCRIPTIONS[code],
      headers,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
    };
  }
  return responses;
}

function errorResponsesFor(isPublic: boolean): Record<string, ReferenceObject> {
  const codes = isPublic ? PUBLIC_ERROR_CODES : Object.values(ErrorCode);
  return Object.fromEntries(
    codes.map((code) => [String(HTTP_STATUS_OF[code]), { $ref: `#/components/responses/${code}` }]),
  );
}

function withOrganizationParameter(
  parameters: (ParameterObject | ReferenceObject)[],
  isPublic: boolean,
): (ParameterObject | ReferenceObject)[] {
  const others = parameters.filter(
    (parameter) => !('name' in parameter) || parameter.name !== ORGANIZATION_HEADER,
  );
  return isPublic ? others : [{ $ref: '#/components/parameters/OrganizationId' }, ...others];
}

/** JSON answers carry an ETag and their validity; a matching If-None-Match is a 304 without a body. */
function addConditionalRequests(operation: OperationObject): void {
  operation.parameters = [...(operation.parameters ?? []), { $ref: '#/components/parameters/IfNoneMatch' }];
  const ok = operation.responses['200'];
  if (ok && !('$ref' in ok)) {
    ok.headers = {
      ETag: { $ref: '#/components/headers/ETag' },
      'Cache-Control': { $ref: '#/components/headers/Cache-Control' },
      'X-Data-As-Of': { $ref: '#/components/headers/X-Data-As-Of' },
      ...ok.headers,
    };
  }
  operation.responses['304'] = { $ref: '#/components/responses/NotModified' };
}

function addRequestIdHeader(response: ResponseObject | ReferenceObject | undefined): void {
  if (!response || '$ref' in response) return;
  response.headers = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, ...response.headers };
}
