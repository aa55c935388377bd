package managedresource

// Compressions is the semaphore of Data, for tests that hold its slots.
var Compressions = compressions
