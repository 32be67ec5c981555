// A one-shot signal for tests that hold one transaction open while another runs: `raise()` resolves
// `raised`. Two of them stage "A has written" and "A may commit".
export interface Signal {
  raised: Promise<void>;
  raise: () => void;
}

export function signal(): Signal {
  let raise!: () => void;
  const raised = new Promise<void>((r) => (raise = r));
  return { raised, raise };
}
