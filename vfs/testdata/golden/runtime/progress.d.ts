declare function progress(
  /** What the program is doing; cut to 1 KiB. */
  message: string,
  /** How far it got, 0 to 1; leave out when unknown. */
  fraction?: number,
): void;
