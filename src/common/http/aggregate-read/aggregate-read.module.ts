import { Global, Module } from '@nestjs/common';
import { AggregateReadGate } from './aggregate-read-gate';
import { AggregateReadInterceptor } from './aggregate-read.interceptor';

/** One gate per replica, shared by every handler marked @AggregateRead(). */
@Global()
@Module({
  providers: [AggregateReadGate, AggregateReadInterceptor],
  exports: [AggregateReadGate, AggregateReadInterceptor],
})
export class AggregateReadGateModule {}
