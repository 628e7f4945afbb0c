import { isDatabaseUnavailable } from '../../../src/database/database-unavailable';

/** TypeORM wraps the driver's error: the code is found one level down. */
function wrapped(code: string): unknown {
  return { message: 'QueryFailedError', driverError: { code, message: 'from the server' } };
}

describe('isDatabaseUnavailable', () => {
  it.each([
    ['57014', 'statement timeout'],
    ['55P03', 'lock not available'],
    ['3D000', 'database does not exist'],
    ['28P01', 'password authentication failed'],
    ['28000', 'role not permitted'],
    ['53300', 'too many connections'],
    ['53200', 'out of memory'],
    ['08006', 'connection failure'],
    ['57P01', 'admin shutdown'],
  ])('treats %s (%s) as the database being unavailable: a 503', (code) => {
    expect(isDatabaseUnavailable(wrapped(code))).toBe(true);
  });

  it.each([
    ['42601', 'syntax error'],
    ['22007', 'invalid datetime'],
    ['23505', 'unique violation'],
  ])('leaves %s (%s), a fault of ours, to the 500 path', (code) => {
    expect(isDatabaseUnavailable(wrapped(code))).toBe(false);
  });

  it('recognises pg’s client-side timeout of a frozen server', () => {
    expect(isDatabaseUnavailable(new Error('Query read timeout'))).toBe(true);
  });
});
