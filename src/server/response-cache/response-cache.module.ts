import { Module } from '@nestjs/common';
import { DataVersions } from './data-versions';
import { ResponseCache } from './response-cache';
import { ResponseCacheInterceptor } from './response-cache.interceptor';

@Module({
  providers: [DataVersions, ResponseCache, ResponseCacheInterceptor],
  exports: [ResponseCache, ResponseCacheInterceptor],
})
export class ResponseCacheModule {}
