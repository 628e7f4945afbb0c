import { Module } from '@nestjs/common';
import { ReadRouter } from './read-router';
import { ReadRoutingInterceptor } from './read-routing.interceptor';

@Module({
  providers: [ReadRouter, ReadRoutingInterceptor],
  exports: [ReadRoutingInterceptor],
})
export class ReadRoutingModule {}
