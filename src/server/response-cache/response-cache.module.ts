import { Module } from '@nestjs/common';
import { ResponseCache } from './response-cache';
import { ResponseCacheInterceptor } from './response-cache.interceptor';

@Module({
  providers: [ResponseCache, ResponseCacheInterceptor],
  exports: [ResponseCache, ResponseCacheInterceptor],
})
export class ResponseCacheModule {}
