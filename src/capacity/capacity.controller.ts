import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { AuthScope } from '../common/auth/auth-scope';
import { Scope } from '../common/auth/auth-scope.decorator';
import { CapacityService } from './capacity.service';
import { CapacityQueryDto } from './dto/capacity-query.dto';
import { CapacityEnvelopeDto, CapacityReportDto } from './dto/capacity-report.dto';

@ApiTags('capacity')
@Controller('capacity')
export class CapacityController {
  constructor(private readonly capacity: CapacityService) {}

  @Get()
  @ApiOperation({
    operationId: 'getCapacity',
    summary:
      'GPU-hour budgets, use inside the current period and burn rates, over your scope and the filters',
  })
  @ApiOkResponse({ type: CapacityEnvelopeDto })
  getCapacity(@Scope() scope: AuthScope, @Query() query: CapacityQueryDto): Promise<CapacityReportDto> {
    return this.capacity.report(scope, query);
  }
}
