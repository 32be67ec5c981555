/**
 * Retry waits in seconds (deliveryRetrySchedule) short enough for a test to see a delivery fail for
 * good: the production schedule's last waits are hours. A test of the schedule itself sets its own.
 */
export const TEST_DELIVERY_RETRY_SCHEDULE = [1, 2, 4, 8, 16];
