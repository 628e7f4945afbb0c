import { loggableError } from '../../../src/common/logging/loggable-error';

describe('loggableError', () => {
  it('keeps the type, code and message of a query failure, never its SQL or parameters', () => {
    const failure = Object.assign(new Error('invalid input syntax for type uuid: "x"'), {
      name: 'QueryFailedError',
      code: '22P02',
      query: 'SELECT secret_column FROM workloads WHERE organization_id = $1',
      parameters: ['org-secret'],
    });
    const logged = loggableError(failure);
    expect(logged).toEqual({
      type: 'QueryFailedError',
      code: '22P02',
      message: 'invalid input syntax for type uuid: "x"',
    });
    expect(JSON.stringify(logged)).not.toMatch(/SELECT|org-secret|at /);
  });

  it('leaves out the message of a connection error, which names the host', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' });
    expect(loggableError(refused, false)).toEqual({ type: 'Error', code: 'ECONNREFUSED' });
  });

  it('describes a thrown non-error', () => {
    expect(loggableError('boom')).toEqual({ type: 'string' });
  });
});
