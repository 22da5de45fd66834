import { MemoryRepo } from "../../src/core/memory";
import { storageConformance } from "../conformance/storage";

storageConformance("MemoryRepo (node)", async () => new MemoryRepo());
