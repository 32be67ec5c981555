// Request validation lives in server/base/validation.ts, below the HTTP layer, so that services and the CLI
// use it too; it is re-exported here for the HTTP layer's modules.
export { issuesOf, parseInput, type InputPart } from '../base/validation.ts';
