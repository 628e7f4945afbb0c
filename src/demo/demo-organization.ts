import type { Role } from '../core/roles';
import type { GpuSharing } from '../common/gpu-sharing';

export const DEMO_ORGANIZATION_ID = 'org-demo';
export const DEMO_TIMEZONE = 'America/New_York';
/** Close enough to New York time for shaping the working day (daylight saving is ignored). */
export const DEMO_UTC_OFFSET_HOURS = -5;

export interface InstanceType {
  name: string;
  gpusPerNode: number;
  /** Watts per GPU idle and at full load (sample power is summed over the workload's GPUs). */
  idleWatts: number;
  maxWatts: number;
  /** Nodes a multi-node job may span (weights index = nodes - 1). */
  nodeWeights: number[];
  /** Every node of a type sits in one cluster, so a pool's workloads all report the same cluster. */
  clusterId: string;
  /**
   * Some nodes of the type hand out slices instead of whole GPUs: `nodeShare` of its single-node
   * workloads run there, on MIG instances (profiles from small to large) or on replicas.
   */
  sharing?: { nodeShare: number; devices: DeviceSharing };
}

export type DeviceSharing =
  { mode: 'mig'; profiles: string[] } | Extract<GpuSharing, { mode: 'time-slicing' | 'mps' }>;

/** Training on H100 and A100 in us-east-1; inference, notebooks and spot work on L4 and A10G in us-west-2. */
export const DEMO_CLUSTERS = ['eks-use1', 'eks-usw2'] as const;
const [TRAINING_CLUSTER, SERVING_CLUSTER] = DEMO_CLUSTERS;

export const INSTANCE_TYPES: Record<string, InstanceType> = {
  'p5.48xlarge': {
    name: 'p5.48xlarge',
    gpusPerNode: 8,
    idleWatts: 90,
    maxWatts: 700,
    nodeWeights: [10, 4, 0, 2],
    clusterId: TRAINING_CLUSTER,
  },
  // MIG-partitioned nodes take half the single-node A100 work (notebooks, evaluation, inference);
  // the profiles differ because p4d carries 40 GB A100s and p4de 80 GB ones.
  'p4d.24xlarge': {
    name: 'p4d.24xlarge',
    gpusPerNode: 8,
    idleWatts: 55,
    maxWatts: 400,
    nodeWeights: [10, 3, 0, 1],
    clusterId: TRAINING_CLUSTER,
    sharing: { nodeShare: 0.5, devices: { mode: 'mig', profiles: ['1g.5gb', '2g.10gb', '3g.20gb'] } },
  },
  'p4de.24xlarge': {
    name: 'p4de.24xlarge',
    gpusPerNode: 8,
    idleWatts: 55,
    maxWatts: 400,
    nodeWeights: [10, 2],
    clusterId: TRAINING_CLUSTER,
    sharing: { nodeShare: 0.5, devices: { mode: 'mig', profiles: ['1g.10gb', '2g.20gb', '3g.40gb'] } },
  },
  'g6.12xlarge': {
    name: 'g6.12xlarge',
    gpusPerNode: 4,
    idleWatts: 16,
    maxWatts: 72,
    nodeWeights: [1],
    clusterId: SERVING_CLUSTER,
    sharing: { nodeShare: 0.5, devices: { mode: 'time-slicing', replicas: 4 } },
  },
  'g6.48xlarge': {
    name: 'g6.48xlarge',
    gpusPerNode: 8,
    idleWatts: 16,
    maxWatts: 72,
    nodeWeights: [1],
    clusterId: SERVING_CLUSTER,
    sharing: { nodeShare: 0.3, devices: { mode: 'mps', replicas: 2 } },
  },
  'g5.12xlarge': {
    name: 'g5.12xlarge',
    gpusPerNode: 4,
    idleWatts: 25,
    maxWatts: 300,
    nodeWeights: [1],
    clusterId: SERVING_CLUSTER,
  },
  'g5.48xlarge': {
    name: 'g5.48xlarge',
    gpusPerNode: 8,
    idleWatts: 25,
    maxWatts: 300,
    nodeWeights: [6, 1],
    clusterId: SERVING_CLUSTER,
  },
  // Owned by no pool, so capacity shows usage that counts for the organization but in no pool.
  'g4dn.xlarge': {
    name: 'g4dn.xlarge',
    gpusPerNode: 1,
    idleWatts: 10,
    maxWatts: 70,
    nodeWeights: [1],
    clusterId: SERVING_CLUSTER,
  },
};

export const POOLS = [
  { poolId: 'h100-reserved', name: 'H100 reserved (p5)', instanceTypes: ['p5.48xlarge'] },
  {
    poolId: 'a100-reserved',
    name: 'A100 reserved (p4d/p4de)',
    instanceTypes: ['p4d.24xlarge', 'p4de.24xlarge'],
  },
  { poolId: 'l4-ondemand', name: 'L4 on-demand (g6)', instanceTypes: ['g6.12xlarge', 'g6.48xlarge'] },
  { poolId: 'a10g-spot', name: 'A10G spot (g5)', instanceTypes: ['g5.12xlarge', 'g5.48xlarge'] },
];

export interface DemoInitiative {
  initiativeId: string;
  name: string;
  /** Share of all workloads. */
  weight: number;
  instanceWeights: Record<string, number>;
  jobNames: string[];
  /** Names of the small jobs that run on GPU slices: notebooks, evaluation, inference. */
  sharedJobNames: string[];
  /** Allocation = GPU hours used so far in the period × this (below 1: over budget). */
  budgetFactor: number;
}

export const INITIATIVES: DemoInitiative[] = [
  {
    initiativeId: 'vision',
    name: 'Computer Vision',
    weight: 25,
    instanceWeights: {
      'p5.48xlarge': 3,
      'p4d.24xlarge': 3,
      'p4de.24xlarge': 1,
      'g5.12xlarge': 2,
      'g6.12xlarge': 1,
    },
    jobNames: ['resnet50-sweep', 'vit-pretrain', 'yolo-finetune', 'detr-eval', 'segformer-train'],
    sharedJobNames: ['jupyter', 'yolo-inference', 'detr-eval', 'label-assist'],
    budgetFactor: 0.92,
  },
  {
    initiativeId: 'nlp',
    name: 'Language Models',
    weight: 25,
    instanceWeights: { 'p5.48xlarge': 4, 'p4de.24xlarge': 3, 'p4d.24xlarge': 1, 'g6.48xlarge': 1 },
    jobNames: ['llama-finetune', 'bert-pretrain', 'tokenizer-bench', 't5-distill', 'rlhf-ppo'],
    sharedJobNames: ['jupyter', 'bert-inference', 'tokenizer-bench', 'embedding-serve'],
    budgetFactor: 1.04,
  },
  {
    initiativeId: 'speech',
    name: 'Speech',
    weight: 12,
    instanceWeights: { 'p4d.24xlarge': 2, 'g5.12xlarge': 3, 'g5.48xlarge': 2, 'g6.12xlarge': 1 },
    jobNames: ['whisper-finetune', 'conformer-train', 'tts-vocoder', 'asr-eval'],
    sharedJobNames: ['jupyter', 'whisper-inference', 'asr-eval'],
    budgetFactor: 1.6,
  },
  {
    initiativeId: 'recsys',
    name: 'Recommendations',
    weight: 15,
    instanceWeights: { 'g6.12xlarge': 3, 'g6.48xlarge': 2, 'g5.12xlarge': 2, 'p4d.24xlarge': 1 },
    jobNames: ['dlrm-train', 'two-tower-retrain', 'embedding-refresh', 'ctr-eval'],
    sharedJobNames: ['jupyter', 'two-tower-serve', 'ctr-eval'],
    budgetFactor: 2.2,
  },
  {
    initiativeId: 'robotics',
    name: 'Robotics',
    weight: 13,
    instanceWeights: { 'g5.12xlarge': 2, 'g4dn.xlarge': 3, 'p4d.24xlarge': 1, 'g6.12xlarge': 2 },
    jobNames: ['sim2real-rollout', 'policy-ppo', 'grasp-net-train', 'nav-eval'],
    sharedJobNames: ['jupyter', 'policy-serve', 'nav-eval'],
    budgetFactor: 1.25,
  },
  {
    initiativeId: 'platform',
    name: 'ML Platform',
    weight: 10,
    instanceWeights: { 'g4dn.xlarge': 2, 'g6.12xlarge': 2, 'g5.12xlarge': 1 },
    jobNames: ['nccl-burnin', 'gpu-healthcheck', 'inference-canary', 'profiler-run'],
    sharedJobNames: ['jupyter', 'inference-canary', 'gpu-healthcheck'],
    budgetFactor: 3,
  },
];

export interface DemoMember {
  subject: string;
  role: Role;
  initiativeIds: string[];
}

const PEOPLE = [
  'alice',
  'bob',
  'carol',
  'dave',
  'erin',
  'frank',
  'grace',
  'heidi',
  'ivan',
  'judy',
  'karl',
  'lena',
  'mallory',
  'nina',
  'oscar',
  'peggy',
  'quinn',
  'rupert',
  'sybil',
  'trent',
  'uma',
  'victor',
  'wendy',
  'xavier',
  'yara',
  'zane',
  'amir',
  'bea',
  'chen',
  'dana',
  'emil',
  'fatima',
  'gus',
  'hana',
  'igor',
  'jonas',
  'kiko',
  'luis',
];

export function demoSubject(person: string): string {
  return `${person}@demo-robotics.example`;
}

/**
 * 40 people: two organization admins, one team lead per initiative, the rest members of one
 * initiative (every fifth also of the next one).
 */
export function demoMembers(): DemoMember[] {
  const members: DemoMember[] = [
    { subject: demoSubject('admin'), role: 'ORG_ADMIN', initiativeIds: [] },
    { subject: demoSubject('olivia'), role: 'ORG_ADMIN', initiativeIds: [] },
  ];
  PEOPLE.forEach((person, index) => {
    const home = INITIATIVES[index % INITIATIVES.length].initiativeId;
    const isLead = index < INITIATIVES.length;
    const second = INITIATIVES[(index + 1) % INITIATIVES.length].initiativeId;
    members.push({
      subject: demoSubject(person),
      role: isLead ? 'TEAM_LEAD' : 'MEMBER',
      initiativeIds: !isLead && index % 5 === 0 ? [home, second] : [home],
    });
  });
  return members;
}
