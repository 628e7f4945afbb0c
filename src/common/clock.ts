import { Global, Injectable, Module } from '@nestjs/common';

/**
 * The service's "now". Figures of running workloads grow by the second, so tests fix the clock
 * (`jest.spyOn(app.get(Clock), 'now')`) and recompute with the same instant instead of bracketing
 * a request between two readings of the wall clock.
 */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}

@Global()
@Module({ providers: [Clock], exports: [Clock] })
export class ClockModule {}
