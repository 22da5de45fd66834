import { MemoryRepo } from "../../src/core/memory";
import { storageConformance } from "../conformance/storage";

storageConformance("MemoryRepo (workerd)", async () => new MemoryRepo());
