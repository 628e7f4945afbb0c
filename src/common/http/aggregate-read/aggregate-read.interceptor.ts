import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { from, lastValueFrom, Observable } from 'rxjs';
import { AggregateReadGate } from './aggregate-read-gate';

/** Runs the handler, and with it its statements, only when the gate gives it a turn. */
@Injectable()
export class AggregateReadInterceptor implements NestInterceptor {
  constructor(private readonly gate: AggregateReadGate) {}

  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return from(this.gate.run(() => lastValueFrom(next.handle())));
  }
}
