import type { Command } from '../cli-context';
export const demoDataCommand: Command = async () => 0;
