import { MemoryRepo } from "../../src/core/internal";
import { storageConformance } from "../conformance/storage";

storageConformance("MemoryRepo (node)", async () => new MemoryRepo());
