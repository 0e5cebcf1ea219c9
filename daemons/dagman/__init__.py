"""condor_dagman and condor_submit_dag: the processes and files around ``eventcore.dagman``."""
