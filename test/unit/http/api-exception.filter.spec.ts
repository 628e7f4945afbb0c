import { BadRequestException, Logger, NotFoundException } from '@nestjs/common';
import { ApiError } from '../../../src/common/http/api-error';
import { ApiExceptionFilter } from '../../../src/common/http/api-exception.filter';

interface Captured {
  status?: number;
  body?: { error: { code: string; message: string; details: unknown[] }; request_id: string };
  headers: Record<string, string>;
}

function render(exception: unknown): Captured {
  const captured: Captured = { headers: {} };
  const response = {
    headersSent: false,
    setHeader: (name: string, value: string) => (captured.headers[name.toLowerCase()] = value),
    getHeader: (name: string) => captured.headers[name.toLowerCase()],
    status(code: number) {
      captured.status = code;
      return this;
    },
    json: (body: Captured['body']) => (captured.body = body),
  };
  const request = { id: 'req-1', method: 'GET', path: '/v1/x' };
  const host = { switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }) };
  new ApiExceptionFilter().catch(exception, host as never);
  return captured;
}

describe('ApiExceptionFilter', () => {
  beforeAll(() => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });

  it('renders an ApiError with its code, status, details and headers', () => {
    const out = render(ApiError.unauthenticated('no token'));
    expect(out.status).toBe(401);
    expect(out.headers['www-authenticate']).toBe('Bearer');
    expect(out.body).toEqual({
      error: { code: 'UNAUTHENTICATED', message: 'no token', details: [] },
      request_id: 'req-1',
    });
  });

  it('turns an unexpected error into INTERNAL_ERROR without leaking anything', () => {
    const error = new Error('duplicate key value violates unique constraint "secret_table_pkey" at 10.0.0.5');
    const out = render(error);
    expect(out.status).toBe(500);
    expect(out.body?.error).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'An unexpected error occurred',
      details: [],
    });
    expect(JSON.stringify(out.body)).not.toMatch(/secret_table|10\.0\.0\.5|at /);
  });

  it('maps a lost database connection to SERVICE_UNAVAILABLE', () => {
    const out = render(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    );
    expect(out.status).toBe(503);
    expect(out.body?.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(out.body?.error.message).not.toContain('127.0.0.1');
  });

  it('maps wrapped driver errors (TypeORM QueryFailedError) by their driver error', () => {
    const out = render({
      message: 'query failed',
      driverError: { code: '57P01', message: 'terminating connection' },
    });
    expect(out.status).toBe(503);
  });

  it('maps a router 404 to NOT_FOUND naming the path', () => {
    const out = render(new NotFoundException('Cannot GET /v1/x'));
    expect(out.body?.error).toEqual({
      code: 'NOT_FOUND',
      message: 'No such resource: GET /v1/x',
      details: [],
    });
  });

  it('maps other 4xx framework rejections to VALIDATION_ERROR with a detail entry', () => {
    const out = render(new BadRequestException('Unexpected token in JSON'));
    expect(out.status).toBe(400);
    expect(out.body?.error.code).toBe('VALIDATION_ERROR');
    expect(out.body?.error.details).toHaveLength(1);
  });
});
