import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The base data model. Every table carries organization_id and every key starts with it, so the
 * schema can later be distributed by organization (Citus: organization_id is the distribution column).
 * Metric samples are partitioned by week of sample time so retention drops whole partitions.
 */
export class BaseSchema1763800000000 implements MigrationInterface {
  name = 'BaseSchema1763800000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE organizations (
        organization_id      text PRIMARY KEY,
        name                 text NOT NULL,
        timezone             text NOT NULL DEFAULT 'UTC',
        budget_period_start  timestamptz NOT NULL,
        budget_period_end    timestamptz NOT NULL,
        created_at           timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT organizations_period_order CHECK (budget_period_start < budget_period_end)
      );

      CREATE TABLE initiatives (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        initiative_id    text NOT NULL,
        name             text NOT NULL,
        PRIMARY KEY (organization_id, initiative_id)
      );

      CREATE TABLE capacity_pools (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        pool_id          text NOT NULL,
        name             text NOT NULL,
        PRIMARY KEY (organization_id, pool_id)
      );

      -- The primary key is what makes "an instance type belongs to at most one pool" hold.
      CREATE TABLE pool_instance_types (
        organization_id  text NOT NULL,
        instance_type    text NOT NULL,
        pool_id          text NOT NULL,
        PRIMARY KEY (organization_id, instance_type),
        FOREIGN KEY (organization_id, pool_id) REFERENCES capacity_pools (organization_id, pool_id) ON DELETE CASCADE
      );
      CREATE INDEX pool_instance_types_pool ON pool_instance_types (organization_id, pool_id);

      CREATE TABLE allocations (
        organization_id      text NOT NULL,
        initiative_id        text NOT NULL,
        pool_id              text NOT NULL,
        allocated_gpu_hours  double precision NOT NULL CHECK (allocated_gpu_hours >= 0),
        PRIMARY KEY (organization_id, initiative_id, pool_id),
        FOREIGN KEY (organization_id, initiative_id) REFERENCES initiatives (organization_id, initiative_id) ON DELETE CASCADE,
        FOREIGN KEY (organization_id, pool_id) REFERENCES capacity_pools (organization_id, pool_id) ON DELETE CASCADE
      );

      CREATE TABLE members (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        subject          text NOT NULL,
        role             text NOT NULL CHECK (role IN ('ORG_ADMIN', 'TEAM_LEAD', 'MEMBER')),
        initiative_ids   text[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (organization_id, subject)
      );

      CREATE TABLE api_tokens (
        organization_id  text NOT NULL REFERENCES organizations (organization_id) ON DELETE CASCADE,
        token_id         text NOT NULL,
        name             text NOT NULL,
        role             text NOT NULL CHECK (role IN ('ORG_ADMIN', 'TEAM_LEAD', 'MEMBER')),
        initiative_ids   text[] NOT NULL DEFAULT '{}',
        secret_hash      bytea NOT NULL,
        created_at       timestamptz NOT NULL DEFAULT now(),
        expires_at       timestamptz,
        revoked_at       timestamptz,
        last_used_at     timestamptz,
        PRIMARY KEY (organization_id, token_id)
      );
      -- Tokens are looked up by their id (embedded in the token text) before the secret is compared.
      CREATE UNIQUE INDEX api_tokens_token_id ON api_tokens (token_id);

      CREATE TABLE workloads (
        organization_id  text NOT NULL,
        workload_id      text NOT NULL,
        initiative_id    text NOT NULL,
        name             text NOT NULL,
        status           text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
        submitted_by     text NOT NULL,
        instance_type    text NOT NULL,
        gpu_count        integer NOT NULL CHECK (gpu_count >= 0),
        is_managed       boolean NOT NULL,
        cluster_id       text NOT NULL,
        namespace        text NOT NULL,
        submitted_at     timestamptz NOT NULL,
        started_at       timestamptz,
        completed_at     timestamptz,
        exit_code        integer,
        PRIMARY KEY (organization_id, workload_id),
        FOREIGN KEY (organization_id, initiative_id) REFERENCES initiatives (organization_id, initiative_id),
        CONSTRAINT workloads_started_after_submitted CHECK (started_at IS NULL OR started_at >= submitted_at),
        CONSTRAINT workloads_completed_after_started CHECK (completed_at IS NULL OR completed_at >= coalesce(started_at, submitted_at)),
        CONSTRAINT workloads_status_times CHECK (
          (status = 'pending'   AND started_at IS NULL AND completed_at IS NULL AND exit_code IS NULL) OR
          (status = 'running'   AND started_at IS NOT NULL AND completed_at IS NULL AND exit_code IS NULL) OR
          (status IN ('completed', 'failed') AND started_at IS NOT NULL AND completed_at IS NOT NULL AND exit_code IS NOT NULL) OR
          (status = 'cancelled' AND completed_at IS NOT NULL)
        )
      );
      -- Keyset paging: newest first, ties by id; one index per common equality filter plus the order.
      CREATE INDEX workloads_org_submitted ON workloads (organization_id, submitted_at DESC, workload_id DESC);
      CREATE INDEX workloads_org_initiative_submitted ON workloads (organization_id, initiative_id, submitted_at DESC, workload_id DESC);
      CREATE INDEX workloads_org_status_submitted ON workloads (organization_id, status, submitted_at DESC, workload_id DESC);
      CREATE INDEX workloads_org_submitter_submitted ON workloads (organization_id, submitted_by, submitted_at DESC, workload_id DESC);
      -- Running workloads are few and are read on every capacity and stats request (accrual up to now).
      CREATE INDEX workloads_org_running ON workloads (organization_id, initiative_id) WHERE status = 'running';

      CREATE TABLE metric_samples (
        organization_id     text NOT NULL,
        workload_id         text NOT NULL,
        sampled_at          timestamptz NOT NULL,
        gpu_utilization     double precision NOT NULL CHECK (gpu_utilization BETWEEN 0 AND 100),
        memory_utilization  double precision NOT NULL CHECK (memory_utilization BETWEEN 0 AND 100),
        temperature         double precision NOT NULL,
        power_usage         double precision NOT NULL CHECK (power_usage >= 0),
        PRIMARY KEY (organization_id, workload_id, sampled_at)
      ) PARTITION BY RANGE (sampled_at);

      -- Weekly partitions (Monday 00:00 UTC); created on demand by import before samples are written.
      CREATE FUNCTION gpucap_ensure_sample_partitions(range_from timestamptz, range_to timestamptz)
      RETURNS integer LANGUAGE plpgsql AS $fn$
      DECLARE
        week_start timestamptz := date_trunc('week', range_from AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
        partition_name text;
        created integer := 0;
      BEGIN
        WHILE week_start <= range_to LOOP
          partition_name := 'metric_samples_w' || to_char(week_start AT TIME ZONE 'UTC', 'IYYY_IW');
          IF to_regclass(partition_name) IS NULL THEN
            EXECUTE format(
              'CREATE TABLE %I PARTITION OF metric_samples FOR VALUES FROM (%L) TO (%L)',
              partition_name, week_start, week_start + interval '7 days');
            created := created + 1;
          END IF;
          week_start := week_start + interval '7 days';
        END LOOP;
        RETURN created;
      END
      $fn$;
    `);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS gpucap_ensure_sample_partitions(timestamptz, timestamptz);
      DROP TABLE IF EXISTS metric_samples;
      DROP TABLE IF EXISTS workloads;
      DROP TABLE IF EXISTS api_tokens;
      DROP TABLE IF EXISTS members;
      DROP TABLE IF EXISTS allocations;
      DROP TABLE IF EXISTS pool_instance_types;
      DROP TABLE IF EXISTS capacity_pools;
      DROP TABLE IF EXISTS initiatives;
      DROP TABLE IF EXISTS organizations;
    `);
  }
}
