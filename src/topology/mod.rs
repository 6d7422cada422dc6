//! topology: logical CPUs, cores, sockets, caches and NUMA nodes read from sysfs.
