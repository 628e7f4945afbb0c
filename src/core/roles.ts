export const ROLES = ['ORG_ADMIN', 'TEAM_LEAD', 'MEMBER'] as const;
export type Role = (typeof ROLES)[number];
