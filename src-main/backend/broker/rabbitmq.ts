export async function startRabbitmqBroker(_o: unknown): Promise<never> { throw new Error("rabbitmq: not yet"); }
