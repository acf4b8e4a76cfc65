// aedes-persistence's in-memory store, as a class to extend (its package types it under types/).
declare module 'aedes-persistence/asyncPersistence.js' {
  import MemoryPersistence from 'aedes-persistence/types/asyncPersistence.js';
  export default MemoryPersistence;
}
