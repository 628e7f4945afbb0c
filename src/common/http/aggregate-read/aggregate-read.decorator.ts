import { UseInterceptors } from '@nestjs/common';
import { AggregateReadInterceptor } from './aggregate-read.interceptor';

/** Marks a handler whose statements aggregate: it computes only when AggregateReadGate gives it a turn. */
export const AggregateRead = () => UseInterceptors(AggregateReadInterceptor);
