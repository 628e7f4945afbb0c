import { Module } from '@nestjs/common';
import { ScopedDatabase } from '../common/database/scoped-database';
import { RecommendationsController } from './recommendations.controller';
import { RecommendationsService } from './recommendations.service';

@Module({
  controllers: [RecommendationsController],
  providers: [RecommendationsService, ScopedDatabase],
})
export class RecommendationsModule {}
