import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Member } from '../../database/entities/member.entity';
import { ApiTokenService } from './api-token.service';
import { CredentialGuard } from './credential.guard';
import { ApiToken } from '../../database/entities/api-token.entity';
import { JwtStrategy } from './jwt.strategy';
import { MembershipService } from './membership.service';

@Module({
  imports: [PassportModule, TypeOrmModule.forFeature([ApiToken, Member])],
  providers: [ApiTokenService, MembershipService, JwtStrategy, CredentialGuard],
  exports: [ApiTokenService, CredentialGuard],
})
export class AuthModule {}
