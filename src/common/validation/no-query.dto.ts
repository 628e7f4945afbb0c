/** For routes that take no query parameters: declaring none makes every one a 400 (contract §1). */
export class NoQueryDto {}
