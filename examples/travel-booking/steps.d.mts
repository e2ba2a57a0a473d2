// Types of steps.mjs, for the TypeScript test that imports it.
export declare const TRIP_STEPS: (decline: boolean) => { service: string; name: string; input?: string }[];
export declare const TRIP_PIVOT: number;
