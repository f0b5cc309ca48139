"""memci's dataclass ``__init__``s and named tuple ``__new__``s, compiled ahead.

Generated: do not edit. :mod:`memci._dataclasses` writes a dataclass's ``__init__`` as
text, and :mod:`memci._records` a named tuple's ``__new__``; compiling them took ~0.1-0.2
ms a class, a tenth of ``import memci``. Here each text memci's classes make is a function
of this module, looked up by its text: nothing is compiled at import. A text not here (a
class added or changed since) is compiled as before. Rewrite this file with ``python -m
tests.inits --write``; ``tests/test_dataclasses.py`` checks that it is current.
"""
# mypy: ignore-errors
# ruff: noqa

def _0(__dataclass_set__,__dataclass_factory__):
 def __init__(self,engine,config,keys,policy,hub,tool_threads,proxy,mcp):
  __dataclass_set__(self,'engine',engine)
  __dataclass_set__(self,'config',config)
  __dataclass_set__(self,'keys',keys)
  __dataclass_set__(self,'policy',policy)
  __dataclass_set__(self,'hub',hub)
  __dataclass_set__(self,'tool_threads',tool_threads)
  __dataclass_set__(self,'proxy',proxy)
  __dataclass_set__(self,'mcp',mcp)
 return __init__

def _1(__dataclass_set__,__dataclass_factory__):
 def __init__(self,files_seen,files_indexed,files_unchanged,files_removed,files_skipped,chunks_written,seconds):
  __dataclass_set__(self,'files_seen',files_seen)
  __dataclass_set__(self,'files_indexed',files_indexed)
  __dataclass_set__(self,'files_unchanged',files_unchanged)
  __dataclass_set__(self,'files_removed',files_removed)
  __dataclass_set__(self,'files_skipped',files_skipped)
  __dataclass_set__(self,'chunks_written',chunks_written)
  __dataclass_set__(self,'seconds',seconds)
 return __init__

def _2(__dataclass_set__,__dataclass_factory__):
 def __init__(self,find,names):
  __dataclass_set__(self,'find',find)
  __dataclass_set__(self,'names',names)
 return __init__

def _3(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,scope,tenant,user,session_id,kind,subject,text,summary,source,page,seen,valid_from,valid_to,superseded_by,created,updated):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'scope',scope)
  __dataclass_set__(self,'tenant',tenant)
  __dataclass_set__(self,'user',user)
  __dataclass_set__(self,'session_id',session_id)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'subject',subject)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'summary',summary)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'page',page)
  __dataclass_set__(self,'seen',seen)
  __dataclass_set__(self,'valid_from',valid_from)
  __dataclass_set__(self,'valid_to',valid_to)
  __dataclass_set__(self,'superseded_by',superseded_by)
  __dataclass_set__(self,'created',created)
  __dataclass_set__(self,'updated',updated)
 return __init__

def _4(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,section,text,source,covers,pos,created_at,actor):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'section',section)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'covers',covers)
  __dataclass_set__(self,'pos',pos)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'actor',actor)
 return __init__

def _5(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,session_id,at,actor,action,target,before,after,reverts):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'session_id',session_id)
  __dataclass_set__(self,'at',at)
  __dataclass_set__(self,'actor',actor)
  __dataclass_set__(self,'action',action)
  __dataclass_set__(self,'target',target)
  __dataclass_set__(self,'before',before)
  __dataclass_set__(self,'after',after)
  __dataclass_set__(self,'reverts',reverts)
 return __init__

def _6(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,summary,source,artifact_ref,milestone,covers,pos,created_at,actor):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'summary',summary)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'artifact_ref',artifact_ref)
  __dataclass_set__(self,'milestone',milestone)
  __dataclass_set__(self,'covers',covers)
  __dataclass_set__(self,'pos',pos)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'actor',actor)
 return __init__

def _7(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,tenant,name,user,settings,created_at):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'tenant',tenant)
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'user',user)
  __dataclass_set__(self,'settings',settings)
  __dataclass_set__(self,'created_at',created_at)
 return __init__

def _8(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,text,done,source,created_at,updated_at,actor):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'done',done)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'updated_at',updated_at)
  __dataclass_set__(self,'actor',actor)
 return __init__

def _9(__dataclass_set__,__dataclass_factory__):
 def __init__(self,id,type,title,summary,source,artifact_ref,ttl,created_at,updated_at,created_round,expires_at,expires_round,actor):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'type',type)
  __dataclass_set__(self,'title',title)
  __dataclass_set__(self,'summary',summary)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'artifact_ref',artifact_ref)
  __dataclass_set__(self,'ttl',ttl)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'updated_at',updated_at)
  __dataclass_set__(self,'created_round',created_round)
  __dataclass_set__(self,'expires_at',expires_at)
  __dataclass_set__(self,'expires_round',expires_round)
  __dataclass_set__(self,'actor',actor)
 return __init__

def _10(__dataclass_set__,__dataclass_factory__):
 def __init__(self,kind,state,count,retried,with_errors):
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'state',state)
  __dataclass_set__(self,'count',count)
  __dataclass_set__(self,'retried',retried)
  __dataclass_set__(self,'with_errors',with_errors)
 return __init__

def _11(__dataclass_set__,__dataclass_factory__):
 def __init__(self,limits,round,next_ids,items,refs):
  __dataclass_set__(self,'limits',limits)
  __dataclass_set__(self,'round',round)
  __dataclass_set__(self,'next_ids',next_ids)
  __dataclass_set__(self,'items',items)
  __dataclass_set__(self,'refs',refs)
 return __init__

def _12(__dataclass_set__,__dataclass_factory__):
 def __init__(self,message,text,evidence):
  __dataclass_set__(self,'message',message)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'evidence',evidence)
 return __init__

def _13(__dataclass_set__,__dataclass_factory__):
 def __init__(self,name,start,stop,tokens):
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'start',start)
  __dataclass_set__(self,'stop',stop)
  __dataclass_set__(self,'tokens',tokens)
 return __init__

def _14(__dataclass_set__,__dataclass_factory__):
 def __init__(self,name,summary,conversations,read):
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'summary',summary)
  __dataclass_set__(self,'conversations',conversations)
  __dataclass_set__(self,'read',read)
 return __init__

def _15(__dataclass_set__,__dataclass_factory__):
 def __init__(self,number,text):
  self.number=number
  self.text=text
 return __init__

def _16(__dataclass_set__,__dataclass_factory__):
 def __init__(self,path,start_line,end_line,title,symbol,kind,text,score,retrievers):
  __dataclass_set__(self,'path',path)
  __dataclass_set__(self,'start_line',start_line)
  __dataclass_set__(self,'end_line',end_line)
  __dataclass_set__(self,'title',title)
  __dataclass_set__(self,'symbol',symbol)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'score',score)
  __dataclass_set__(self,'retrievers',retrievers)
 return __init__

def _17(__dataclass_set__,__dataclass_factory__):
 def __init__(self,question,evidence,verbatim,close):
  __dataclass_set__(self,'question',question)
  __dataclass_set__(self,'evidence',evidence)
  __dataclass_set__(self,'verbatim',verbatim)
  __dataclass_set__(self,'close',close)
 return __init__

def _18(__dataclass_set__,__dataclass_factory__):
 def __init__(self,request,seq,kind,page,text,reason):
  __dataclass_set__(self,'request',request)
  __dataclass_set__(self,'seq',seq)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'page',page)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'reason',reason)
 return __init__

def _19(__dataclass_set__,__dataclass_factory__):
 def __init__(self,spec,handler):
  __dataclass_set__(self,'spec',spec)
  __dataclass_set__(self,'handler',handler)
 return __init__

def _20(__dataclass_set__,__dataclass_factory__):
 def __init__(self,table,source,target):
  __dataclass_set__(self,'table',table)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'target',target)
 return __init__

def _21(__dataclass_set__,__dataclass_factory__):
 def __init__(self,terms,rows,hits):
  __dataclass_set__(self,'terms',terms)
  __dataclass_set__(self,'rows',rows)
  __dataclass_set__(self,'hits',hits)
 return __init__

def _22(__dataclass_set__,__dataclass_factory__):
 def __init__(self,url,headers,content):
  __dataclass_set__(self,'url',url)
  __dataclass_set__(self,'headers',headers)
  __dataclass_set__(self,'content',content)
 return __init__

def _23(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_after__,__dataclass_dflt_kind__):
 def __init__(self,start,after=__dataclass_dflt_after__,kind=__dataclass_dflt_kind__):
  __dataclass_set__(self,'start',start)
  __dataclass_set__(self,'after',after)
  __dataclass_set__(self,'kind',kind)
 return __init__

def _24(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_arguments__,__dataclass_dflt_id__):
 def __init__(self,name,arguments=__dataclass_dflt_arguments__,id=__dataclass_dflt_id__):
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'arguments',arguments)
  __dataclass_set__(self,'id',id)
 return __init__

def _25(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_arguments__,__dataclass_dflt_kind__,__dataclass_dflt_item_id__):
 def __init__(self,id,name,arguments=__dataclass_dflt_arguments__,kind=__dataclass_dflt_kind__,item_id=__dataclass_dflt_item_id__):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'arguments',arguments)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'item_id',item_id)
 return __init__

def _26(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_blocks__):
 def __init__(self,role,blocks=__dataclass_factory__):
  self.role=role
  self.blocks=__dataclass_dflt_blocks__() if blocks is __dataclass_factory__ else blocks
 return __init__

def _27(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_busy__,__dataclass_dflt_last__):
 def __init__(self,id,key,tenant,owner,busy=__dataclass_dflt_busy__,last=__dataclass_dflt_last__):
  self.id=id
  self.key=key
  self.tenant=tenant
  self.owner=owner
  self.busy=busy
  self.last=last
 return __init__

def _28(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_cached__):
 def __init__(self,query,episodes,preferences,elapsed_ms,cached=__dataclass_dflt_cached__):
  __dataclass_set__(self,'query',query)
  __dataclass_set__(self,'episodes',episodes)
  __dataclass_set__(self,'preferences',preferences)
  __dataclass_set__(self,'elapsed_ms',elapsed_ms)
  __dataclass_set__(self,'cached',cached)
 return __init__

def _29(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_carry__,__dataclass_dflt_keeps_most__,__dataclass_dflt_refs__):
 def __init__(self,join,where,args,shards,carry=__dataclass_dflt_carry__,keeps_most=__dataclass_dflt_keeps_most__,refs=__dataclass_dflt_refs__):
  __dataclass_set__(self,'join',join)
  __dataclass_set__(self,'where',where)
  __dataclass_set__(self,'args',args)
  __dataclass_set__(self,'shards',shards)
  __dataclass_set__(self,'carry',carry)
  __dataclass_set__(self,'keeps_most',keeps_most)
  __dataclass_set__(self,'refs',refs)
 return __init__

def _30(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_closing__,__dataclass_dflt_refused__):
 def __init__(self,key,tenant,closing=__dataclass_factory__,refused=__dataclass_dflt_refused__):
  self.key=key
  self.tenant=tenant
  self.closing=__dataclass_dflt_closing__() if closing is __dataclass_factory__ else closing
  self.refused=refused
 return __init__

def _31(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_counts__,__dataclass_dflt_files__):
 def __init__(self,counts=__dataclass_factory__,files=__dataclass_dflt_files__):
  __dataclass_set__(self,'counts',__dataclass_dflt_counts__() if counts is __dataclass_factory__ else counts)
  __dataclass_set__(self,'files',files)
 return __init__

def _32(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_detail__,__dataclass_dflt_recall_count__,__dataclass_dflt_last_recall_round__,__dataclass_dflt_archived_round__):
 def __init__(self,page,first_seq,last_seq,messages,tokens,place,detail=__dataclass_dflt_detail__,recall_count=__dataclass_dflt_recall_count__,last_recall_round=__dataclass_dflt_last_recall_round__,archived_round=__dataclass_dflt_archived_round__):
  __dataclass_set__(self,'page',page)
  __dataclass_set__(self,'first_seq',first_seq)
  __dataclass_set__(self,'last_seq',last_seq)
  __dataclass_set__(self,'messages',messages)
  __dataclass_set__(self,'tokens',tokens)
  __dataclass_set__(self,'place',place)
  __dataclass_set__(self,'detail',detail)
  __dataclass_set__(self,'recall_count',recall_count)
  __dataclass_set__(self,'last_recall_round',last_recall_round)
  __dataclass_set__(self,'archived_round',archived_round)
 return __init__

def _33(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_event__):
 def __init__(self,draft,event=__dataclass_dflt_event__):
  self.draft=draft
  self.event=event
 return __init__

def _34(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_events__,__dataclass_dflt_full_cached_tokens__,__dataclass_dflt_segments__,__dataclass_dflt_evidence__,__dataclass_dflt_own_tokens__):
 def __init__(self,number,seq,memci_tokens,full_tokens,build_ms,prefix_tokens,events=__dataclass_dflt_events__,full_cached_tokens=__dataclass_dflt_full_cached_tokens__,segments=__dataclass_factory__,evidence=__dataclass_dflt_evidence__,own_tokens=__dataclass_dflt_own_tokens__):
  __dataclass_set__(self,'number',number)
  __dataclass_set__(self,'seq',seq)
  __dataclass_set__(self,'memci_tokens',memci_tokens)
  __dataclass_set__(self,'full_tokens',full_tokens)
  __dataclass_set__(self,'build_ms',build_ms)
  __dataclass_set__(self,'prefix_tokens',prefix_tokens)
  __dataclass_set__(self,'events',events)
  __dataclass_set__(self,'full_cached_tokens',full_cached_tokens)
  __dataclass_set__(self,'segments',__dataclass_dflt_segments__() if segments is __dataclass_factory__ else segments)
  __dataclass_set__(self,'evidence',evidence)
  __dataclass_set__(self,'own_tokens',own_tokens)
 return __init__

def _35(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_facts__,__dataclass_dflt_source__):
 def __init__(self,eligible,kind,reason,facts=__dataclass_factory__,source=__dataclass_dflt_source__):
  __dataclass_set__(self,'eligible',eligible)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'reason',reason)
  __dataclass_set__(self,'facts',__dataclass_dflt_facts__() if facts is __dataclass_factory__ else facts)
  __dataclass_set__(self,'source',source)
 return __init__

def _36(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_file_roots__,__dataclass_dflt_max_message_bytes__):
 def __init__(self,file_roots=__dataclass_dflt_file_roots__,max_message_bytes=__dataclass_dflt_max_message_bytes__):
  __dataclass_set__(self,'file_roots',file_roots)
  __dataclass_set__(self,'max_message_bytes',max_message_bytes)
  self.__post_init__()
 return __init__

def _37(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_history__):
 def __init__(self,head,tail,whole,history=__dataclass_dflt_history__):
  __dataclass_set__(self,'head',head)
  __dataclass_set__(self,'tail',tail)
  __dataclass_set__(self,'whole',whole)
  __dataclass_set__(self,'history',history)
 return __init__

def _38(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_is_error__,__dataclass_dflt_kind__):
 def __init__(self,call_id,content,is_error=__dataclass_dflt_is_error__,kind=__dataclass_dflt_kind__):
  __dataclass_set__(self,'call_id',call_id)
  __dataclass_set__(self,'content',content)
  __dataclass_set__(self,'is_error',is_error)
  __dataclass_set__(self,'kind',kind)
 return __init__

def _39(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_item__):
 def __init__(self,message,page,score,retrievers,session,item=__dataclass_dflt_item__):
  __dataclass_set__(self,'message',message)
  __dataclass_set__(self,'page',page)
  __dataclass_set__(self,'score',score)
  __dataclass_set__(self,'retrievers',retrievers)
  __dataclass_set__(self,'session',session)
  __dataclass_set__(self,'item',item)
 return __init__

def _40(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_items__,__dataclass_dflt_size__):
 def __init__(self,budget,items=__dataclass_factory__,size=__dataclass_dflt_size__):
  self.budget=budget
  self.items=__dataclass_dflt_items__() if items is __dataclass_factory__ else items
  self.size=size
 return __init__

def _41(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_jobs_pending__,__dataclass_dflt_jobs_failed__,__dataclass_dflt_jobs_gave_up__,__dataclass_dflt_jobs_last_error__):
 def __init__(self,messages,pages,builds,mean_build_ms,tokens_saved,archived,recalled,evicted,jobs_pending=__dataclass_dflt_jobs_pending__,jobs_failed=__dataclass_dflt_jobs_failed__,jobs_gave_up=__dataclass_dflt_jobs_gave_up__,jobs_last_error=__dataclass_dflt_jobs_last_error__):
  __dataclass_set__(self,'messages',messages)
  __dataclass_set__(self,'pages',pages)
  __dataclass_set__(self,'builds',builds)
  __dataclass_set__(self,'mean_build_ms',mean_build_ms)
  __dataclass_set__(self,'tokens_saved',tokens_saved)
  __dataclass_set__(self,'archived',archived)
  __dataclass_set__(self,'recalled',recalled)
  __dataclass_set__(self,'evicted',evicted)
  __dataclass_set__(self,'jobs_pending',jobs_pending)
  __dataclass_set__(self,'jobs_failed',jobs_failed)
  __dataclass_set__(self,'jobs_gave_up',jobs_gave_up)
  __dataclass_set__(self,'jobs_last_error',jobs_last_error)
 return __init__

def _42(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_kind__,__dataclass_dflt_item_id__):
 def __init__(self,text,kind=__dataclass_dflt_kind__,item_id=__dataclass_dflt_item_id__):
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'item_id',item_id)
 return __init__

def _43(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_label__):
 def __init__(self,start,end,label=__dataclass_dflt_label__):
  __dataclass_set__(self,'start',start)
  __dataclass_set__(self,'end',end)
  __dataclass_set__(self,'label',label)
  self.__post_init__()
 return __init__

def _44(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_line__):
 def __init__(self,index,text,features,score,line=__dataclass_dflt_line__):
  __dataclass_set__(self,'index',index)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'features',features)
  __dataclass_set__(self,'score',score)
  __dataclass_set__(self,'line',line)
 return __init__

def _45(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_max_body_bytes__,__dataclass_dflt_auth__,__dataclass_dflt_default_tenant__,__dataclass_dflt_upstream_base_url__,__dataclass_dflt_upstream_api_key__,__dataclass_dflt_upstream_anthropic_base_url__,__dataclass_dflt_upstream_anthropic_api_key__,__dataclass_dflt_upstream_timeout__,__dataclass_dflt_max_tool_rounds__,__dataclass_dflt_file_roots__,__dataclass_dflt_max_message_bytes__,__dataclass_dflt_max_response_bytes__,__dataclass_dflt_header_timeout__,__dataclass_dflt_body_timeout__,__dataclass_dflt_max_connections_per_client__,__dataclass_dflt_max_connections__,__dataclass_dflt_mcp_sessions_per_key__,__dataclass_dflt_mcp_sessions_per_tenant__,__dataclass_dflt_mcp_sessions__,__dataclass_dflt_mcp_idle_seconds__,__dataclass_dflt_allowed_origins__,__dataclass_dflt_allowed_hosts__):
 def __init__(self,max_body_bytes=__dataclass_dflt_max_body_bytes__,auth=__dataclass_dflt_auth__,default_tenant=__dataclass_dflt_default_tenant__,upstream_base_url=__dataclass_dflt_upstream_base_url__,upstream_api_key=__dataclass_dflt_upstream_api_key__,upstream_anthropic_base_url=__dataclass_dflt_upstream_anthropic_base_url__,upstream_anthropic_api_key=__dataclass_dflt_upstream_anthropic_api_key__,upstream_timeout=__dataclass_dflt_upstream_timeout__,max_tool_rounds=__dataclass_dflt_max_tool_rounds__,file_roots=__dataclass_dflt_file_roots__,max_message_bytes=__dataclass_dflt_max_message_bytes__,max_response_bytes=__dataclass_dflt_max_response_bytes__,header_timeout=__dataclass_dflt_header_timeout__,body_timeout=__dataclass_dflt_body_timeout__,max_connections_per_client=__dataclass_dflt_max_connections_per_client__,max_connections=__dataclass_dflt_max_connections__,mcp_sessions_per_key=__dataclass_dflt_mcp_sessions_per_key__,mcp_sessions_per_tenant=__dataclass_dflt_mcp_sessions_per_tenant__,mcp_sessions=__dataclass_dflt_mcp_sessions__,mcp_idle_seconds=__dataclass_dflt_mcp_idle_seconds__,allowed_origins=__dataclass_dflt_allowed_origins__,allowed_hosts=__dataclass_dflt_allowed_hosts__):
  __dataclass_set__(self,'max_body_bytes',max_body_bytes)
  __dataclass_set__(self,'auth',auth)
  __dataclass_set__(self,'default_tenant',default_tenant)
  __dataclass_set__(self,'upstream_base_url',upstream_base_url)
  __dataclass_set__(self,'upstream_api_key',upstream_api_key)
  __dataclass_set__(self,'upstream_anthropic_base_url',upstream_anthropic_base_url)
  __dataclass_set__(self,'upstream_anthropic_api_key',upstream_anthropic_api_key)
  __dataclass_set__(self,'upstream_timeout',upstream_timeout)
  __dataclass_set__(self,'max_tool_rounds',max_tool_rounds)
  __dataclass_set__(self,'file_roots',file_roots)
  __dataclass_set__(self,'max_message_bytes',max_message_bytes)
  __dataclass_set__(self,'max_response_bytes',max_response_bytes)
  __dataclass_set__(self,'header_timeout',header_timeout)
  __dataclass_set__(self,'body_timeout',body_timeout)
  __dataclass_set__(self,'max_connections_per_client',max_connections_per_client)
  __dataclass_set__(self,'max_connections',max_connections)
  __dataclass_set__(self,'mcp_sessions_per_key',mcp_sessions_per_key)
  __dataclass_set__(self,'mcp_sessions_per_tenant',mcp_sessions_per_tenant)
  __dataclass_set__(self,'mcp_sessions',mcp_sessions)
  __dataclass_set__(self,'mcp_idle_seconds',mcp_idle_seconds)
  __dataclass_set__(self,'allowed_origins',allowed_origins)
  __dataclass_set__(self,'allowed_hosts',allowed_hosts)
  self.__post_init__()
 return __init__

def _46(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_media_type__,__dataclass_dflt_detail__,__dataclass_dflt_kind__):
 def __init__(self,url,media_type=__dataclass_dflt_media_type__,detail=__dataclass_dflt_detail__,kind=__dataclass_dflt_kind__):
  __dataclass_set__(self,'url',url)
  __dataclass_set__(self,'media_type',media_type)
  __dataclass_set__(self,'detail',detail)
  __dataclass_set__(self,'kind',kind)
 return __init__

def _47(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_model__,__dataclass_dflt_provider__,__dataclass_dflt_context_window__,__dataclass_dflt_reserve_ratio__,__dataclass_dflt_strategy__,__dataclass_dflt_tokenizer__,__dataclass_dflt_max_messages__,__dataclass_dflt_max_tokens__,__dataclass_dflt_max_message_bytes__,__dataclass_dflt_max_request_bytes__,__dataclass_dflt_file_roots__,__dataclass_dflt_language__,__dataclass_dflt_archive_low_watermark__,__dataclass_dflt_evict_unrecalled_rounds__,__dataclass_dflt_evict_unchanged_rounds__,__dataclass_dflt_contents_max_tokens__,__dataclass_dflt_contents_entry_lines__,__dataclass_dflt_tool_head_tokens__,__dataclass_dflt_keep_rounds__,__dataclass_dflt_tool_loop_tokens__,__dataclass_dflt_ctx_recent_max_tokens__,__dataclass_dflt_summary_swap_rounds__,__dataclass_dflt_retrieval__,__dataclass_dflt_tools__):
 def __init__(self,model=__dataclass_dflt_model__,provider=__dataclass_dflt_provider__,context_window=__dataclass_dflt_context_window__,reserve_ratio=__dataclass_dflt_reserve_ratio__,strategy=__dataclass_dflt_strategy__,tokenizer=__dataclass_dflt_tokenizer__,max_messages=__dataclass_dflt_max_messages__,max_tokens=__dataclass_dflt_max_tokens__,max_message_bytes=__dataclass_dflt_max_message_bytes__,max_request_bytes=__dataclass_dflt_max_request_bytes__,file_roots=__dataclass_factory__,language=__dataclass_dflt_language__,archive_low_watermark=__dataclass_dflt_archive_low_watermark__,evict_unrecalled_rounds=__dataclass_dflt_evict_unrecalled_rounds__,evict_unchanged_rounds=__dataclass_dflt_evict_unchanged_rounds__,contents_max_tokens=__dataclass_dflt_contents_max_tokens__,contents_entry_lines=__dataclass_dflt_contents_entry_lines__,tool_head_tokens=__dataclass_dflt_tool_head_tokens__,keep_rounds=__dataclass_dflt_keep_rounds__,tool_loop_tokens=__dataclass_dflt_tool_loop_tokens__,ctx_recent_max_tokens=__dataclass_dflt_ctx_recent_max_tokens__,summary_swap_rounds=__dataclass_dflt_summary_swap_rounds__,retrieval=__dataclass_dflt_retrieval__,tools=__dataclass_dflt_tools__):
  __dataclass_set__(self,'model',model)
  __dataclass_set__(self,'provider',provider)
  __dataclass_set__(self,'context_window',context_window)
  __dataclass_set__(self,'reserve_ratio',reserve_ratio)
  __dataclass_set__(self,'strategy',strategy)
  __dataclass_set__(self,'tokenizer',tokenizer)
  __dataclass_set__(self,'max_messages',max_messages)
  __dataclass_set__(self,'max_tokens',max_tokens)
  __dataclass_set__(self,'max_message_bytes',max_message_bytes)
  __dataclass_set__(self,'max_request_bytes',max_request_bytes)
  __dataclass_set__(self,'file_roots',__dataclass_dflt_file_roots__() if file_roots is __dataclass_factory__ else file_roots)
  __dataclass_set__(self,'language',language)
  __dataclass_set__(self,'archive_low_watermark',archive_low_watermark)
  __dataclass_set__(self,'evict_unrecalled_rounds',evict_unrecalled_rounds)
  __dataclass_set__(self,'evict_unchanged_rounds',evict_unchanged_rounds)
  __dataclass_set__(self,'contents_max_tokens',contents_max_tokens)
  __dataclass_set__(self,'contents_entry_lines',contents_entry_lines)
  __dataclass_set__(self,'tool_head_tokens',tool_head_tokens)
  __dataclass_set__(self,'keep_rounds',keep_rounds)
  __dataclass_set__(self,'tool_loop_tokens',tool_loop_tokens)
  __dataclass_set__(self,'ctx_recent_max_tokens',ctx_recent_max_tokens)
  __dataclass_set__(self,'summary_swap_rounds',summary_swap_rounds)
  __dataclass_set__(self,'retrieval',retrieval)
  __dataclass_set__(self,'tools',tools)
 return __init__

def _48(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_name__,__dataclass_dflt_metadata__,__dataclass_dflt_created_at__,__dataclass_dflt_session__,__dataclass_dflt_seq__,__dataclass_dflt_tokens__):
 def __init__(self,role,parts,name=__dataclass_dflt_name__,metadata=__dataclass_factory__,created_at=__dataclass_dflt_created_at__,session=__dataclass_dflt_session__,seq=__dataclass_dflt_seq__,tokens=__dataclass_dflt_tokens__):
  __dataclass_set__(self,'role',role)
  __dataclass_set__(self,'parts',parts)
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'metadata',__dataclass_dflt_metadata__() if metadata is __dataclass_factory__ else metadata)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'session',session)
  __dataclass_set__(self,'seq',seq)
  __dataclass_set__(self,'tokens',tokens)
 return __init__

def _49(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_origins__,__dataclass_dflt_hosts__):
 def __init__(self,origins=__dataclass_dflt_origins__,hosts=__dataclass_dflt_hosts__):
  __dataclass_set__(self,'origins',origins)
  __dataclass_set__(self,'hosts',hosts)
 return __init__

def _50(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pages__,__dataclass_dflt_counts__,__dataclass_dflt_values__):
 def __init__(self,version,pages=__dataclass_dflt_pages__,counts=__dataclass_factory__,values=__dataclass_factory__):
  __dataclass_set__(self,'version',version)
  __dataclass_set__(self,'pages',pages)
  __dataclass_set__(self,'counts',__dataclass_dflt_counts__() if counts is __dataclass_factory__ else counts)
  __dataclass_set__(self,'values',__dataclass_dflt_values__() if values is __dataclass_factory__ else values)
 return __init__

def _51(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pages__,__dataclass_dflt_events__):
 def __init__(self,pages=__dataclass_factory__,events=__dataclass_factory__):
  self.pages=__dataclass_dflt_pages__() if pages is __dataclass_factory__ else pages
  self.events=__dataclass_dflt_events__() if events is __dataclass_factory__ else events
 return __init__

def _52(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pages__,__dataclass_dflt_events__,__dataclass_dflt_values__):
 def __init__(self,pages=__dataclass_dflt_pages__,events=__dataclass_dflt_events__,values=__dataclass_factory__):
  __dataclass_set__(self,'pages',pages)
  __dataclass_set__(self,'events',events)
  __dataclass_set__(self,'values',__dataclass_dflt_values__() if values is __dataclass_factory__ else values)
 return __init__

def _53(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_phrases__):
 def __init__(self,rows,tokens,holding,phrases=__dataclass_factory__):
  __dataclass_set__(self,'rows',rows)
  __dataclass_set__(self,'tokens',tokens)
  __dataclass_set__(self,'holding',holding)
  __dataclass_set__(self,'phrases',__dataclass_dflt_phrases__() if phrases is __dataclass_factory__ else phrases)
 return __init__

def _54(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pins__,__dataclass_dflt_plan__,__dataclass_dflt_notebook__,__dataclass_dflt_fastmemo__,__dataclass_dflt_context_pool__,__dataclass_dflt_sections__,__dataclass_dflt_source__,__dataclass_dflt_expires__,__dataclass_dflt_milestone__,__dataclass_dflt_done__):
 def __init__(self,pins=__dataclass_dflt_pins__,plan=__dataclass_dflt_plan__,notebook=__dataclass_dflt_notebook__,fastmemo=__dataclass_dflt_fastmemo__,context_pool=__dataclass_dflt_context_pool__,sections=__dataclass_factory__,source=__dataclass_dflt_source__,expires=__dataclass_dflt_expires__,milestone=__dataclass_dflt_milestone__,done=__dataclass_dflt_done__):
  __dataclass_set__(self,'pins',pins)
  __dataclass_set__(self,'plan',plan)
  __dataclass_set__(self,'notebook',notebook)
  __dataclass_set__(self,'fastmemo',fastmemo)
  __dataclass_set__(self,'context_pool',context_pool)
  __dataclass_set__(self,'sections',__dataclass_dflt_sections__() if sections is __dataclass_factory__ else sections)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'expires',expires)
  __dataclass_set__(self,'milestone',milestone)
  __dataclass_set__(self,'done',done)
 return __init__

def _55(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pins_max__,__dataclass_dflt_pin_summary_max__,__dataclass_dflt_pin_title_max__,__dataclass_dflt_pin_default_ttl__,__dataclass_dflt_plan_max__,__dataclass_dflt_plan_text_max__,__dataclass_dflt_notebook_max__,__dataclass_dflt_notebook_compress_batch__,__dataclass_dflt_notebook_entry_max__,__dataclass_dflt_milestone_max__,__dataclass_dflt_fastmemo_section_max__,__dataclass_dflt_fastmemo_keep_recent__,__dataclass_dflt_fastmemo_entry_max__,__dataclass_dflt_fastmemo_sections__,__dataclass_dflt_pool_section__):
 def __init__(self,pins_max=__dataclass_dflt_pins_max__,pin_summary_max=__dataclass_dflt_pin_summary_max__,pin_title_max=__dataclass_dflt_pin_title_max__,pin_default_ttl=__dataclass_dflt_pin_default_ttl__,plan_max=__dataclass_dflt_plan_max__,plan_text_max=__dataclass_dflt_plan_text_max__,notebook_max=__dataclass_dflt_notebook_max__,notebook_compress_batch=__dataclass_dflt_notebook_compress_batch__,notebook_entry_max=__dataclass_dflt_notebook_entry_max__,milestone_max=__dataclass_dflt_milestone_max__,fastmemo_section_max=__dataclass_dflt_fastmemo_section_max__,fastmemo_keep_recent=__dataclass_dflt_fastmemo_keep_recent__,fastmemo_entry_max=__dataclass_dflt_fastmemo_entry_max__,fastmemo_sections=__dataclass_dflt_fastmemo_sections__,pool_section=__dataclass_dflt_pool_section__):
  __dataclass_set__(self,'pins_max',pins_max)
  __dataclass_set__(self,'pin_summary_max',pin_summary_max)
  __dataclass_set__(self,'pin_title_max',pin_title_max)
  __dataclass_set__(self,'pin_default_ttl',pin_default_ttl)
  __dataclass_set__(self,'plan_max',plan_max)
  __dataclass_set__(self,'plan_text_max',plan_text_max)
  __dataclass_set__(self,'notebook_max',notebook_max)
  __dataclass_set__(self,'notebook_compress_batch',notebook_compress_batch)
  __dataclass_set__(self,'notebook_entry_max',notebook_entry_max)
  __dataclass_set__(self,'milestone_max',milestone_max)
  __dataclass_set__(self,'fastmemo_section_max',fastmemo_section_max)
  __dataclass_set__(self,'fastmemo_keep_recent',fastmemo_keep_recent)
  __dataclass_set__(self,'fastmemo_entry_max',fastmemo_entry_max)
  __dataclass_set__(self,'fastmemo_sections',fastmemo_sections)
  __dataclass_set__(self,'pool_section',pool_section)
  self.__post_init__()
 return __init__

def _56(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_planned_tokens__,__dataclass_dflt_payload_bytes__,__dataclass_dflt_memory_room__,__dataclass_dflt_cache__,__dataclass_dflt_whole__,__dataclass_dflt_blocks__):
 def __init__(self,history,window,window_tokens,retrieval,memory,state,changes,planned_tokens=__dataclass_dflt_planned_tokens__,payload_bytes=__dataclass_dflt_payload_bytes__,memory_room=__dataclass_dflt_memory_room__,cache=__dataclass_factory__,whole=__dataclass_dflt_whole__,blocks=__dataclass_factory__):
  self.history=history
  self.window=window
  self.window_tokens=window_tokens
  self.retrieval=retrieval
  self.memory=memory
  self.state=state
  self.changes=changes
  self.planned_tokens=planned_tokens
  self.payload_bytes=payload_bytes
  self.memory_room=memory_room
  self.cache=__dataclass_dflt_cache__() if cache is __dataclass_factory__ else cache
  self.whole=whole
  self.blocks=__dataclass_dflt_blocks__() if blocks is __dataclass_factory__ else blocks
 return __init__

def _57(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_policy__):
 def __init__(self,key_id,tenant,label,created_at,revoked_at,policy=__dataclass_factory__):
  __dataclass_set__(self,'key_id',key_id)
  __dataclass_set__(self,'tenant',tenant)
  __dataclass_set__(self,'label',label)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'revoked_at',revoked_at)
  __dataclass_set__(self,'policy',__dataclass_dflt_policy__() if policy is __dataclass_factory__ else policy)
 return __init__

def _58(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_prefix__):
 def __init__(self,terms,prefix=__dataclass_dflt_prefix__):
  __dataclass_set__(self,'terms',terms)
  __dataclass_set__(self,'prefix',prefix)
 return __init__

def _59(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_profiles__,__dataclass_dflt_long_after_turns__):
 def __init__(self,profiles=__dataclass_factory__,long_after_turns=__dataclass_dflt_long_after_turns__):
  __dataclass_set__(self,'profiles',__dataclass_dflt_profiles__() if profiles is __dataclass_factory__ else profiles)
  __dataclass_set__(self,'long_after_turns',long_after_turns)
  self.__post_init__()
 return __init__

def _60(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_ran__,__dataclass_dflt_succeeded__,__dataclass_dflt_failed__,__dataclass_dflt_retrying__,__dataclass_dflt_gave_up__,__dataclass_dflt_lost__,__dataclass_dflt_last_error__):
 def __init__(self,ran=__dataclass_dflt_ran__,succeeded=__dataclass_dflt_succeeded__,failed=__dataclass_dflt_failed__,retrying=__dataclass_dflt_retrying__,gave_up=__dataclass_dflt_gave_up__,lost=__dataclass_dflt_lost__,last_error=__dataclass_dflt_last_error__):
  __dataclass_set__(self,'ran',ran)
  __dataclass_set__(self,'succeeded',succeeded)
  __dataclass_set__(self,'failed',failed)
  __dataclass_set__(self,'retrying',retrying)
  __dataclass_set__(self,'gave_up',gave_up)
  __dataclass_set__(self,'lost',lost)
  __dataclass_set__(self,'last_error',last_error)
 return __init__

def _61(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_reasons__,__dataclass_dflt_time_range__,__dataclass_dflt_source__):
 def __init__(self,sources,reasons=__dataclass_factory__,time_range=__dataclass_dflt_time_range__,source=__dataclass_dflt_source__):
  __dataclass_set__(self,'sources',sources)
  __dataclass_set__(self,'reasons',__dataclass_dflt_reasons__() if reasons is __dataclass_factory__ else reasons)
  __dataclass_set__(self,'time_range',time_range)
  __dataclass_set__(self,'source',source)
 return __init__

def _62(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_recall_count__,__dataclass_dflt_last_recall_round__,__dataclass_dflt_tokens__,__dataclass_dflt_source__):
 def __init__(self,page,first_seq,last_seq,lines,archived_round,recall_count=__dataclass_dflt_recall_count__,last_recall_round=__dataclass_dflt_last_recall_round__,tokens=__dataclass_dflt_tokens__,source=__dataclass_dflt_source__):
  self.page=page
  self.first_seq=first_seq
  self.last_seq=last_seq
  self.lines=lines
  self.archived_round=archived_round
  self.recall_count=recall_count
  self.last_recall_round=last_recall_round
  self.tokens=tokens
  self.source=source
 return __init__

def _63(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_requests__,__dataclass_dflt_skipped__,__dataclass_dflt_messages__,__dataclass_dflt_format__,__dataclass_dflt_tools_tokens__,__dataclass_dflt_cached_discount__,__dataclass_dflt_price__,__dataclass_dflt_session__,__dataclass_dflt_store__,__dataclass_dflt_tokenizer__,__dataclass_dflt_tokenizer_note__):
 def __init__(self,requests=__dataclass_factory__,skipped=__dataclass_factory__,messages=__dataclass_dflt_messages__,format=__dataclass_dflt_format__,tools_tokens=__dataclass_dflt_tools_tokens__,cached_discount=__dataclass_dflt_cached_discount__,price=__dataclass_dflt_price__,session=__dataclass_dflt_session__,store=__dataclass_dflt_store__,tokenizer=__dataclass_dflt_tokenizer__,tokenizer_note=__dataclass_dflt_tokenizer_note__):
  self.requests=__dataclass_dflt_requests__() if requests is __dataclass_factory__ else requests
  self.skipped=__dataclass_dflt_skipped__() if skipped is __dataclass_factory__ else skipped
  self.messages=messages
  self.format=format
  self.tools_tokens=tools_tokens
  self.cached_discount=cached_discount
  self.price=price
  self.session=session
  self.store=store
  self.tokenizer=tokenizer
  self.tokenizer_note=tokenizer_note
 return __init__

def _64(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_rows__):
 def __init__(self,columns,rows=__dataclass_factory__):
  __dataclass_set__(self,'columns',columns)
  __dataclass_set__(self,'rows',__dataclass_dflt_rows__() if rows is __dataclass_factory__ else rows)
 return __init__

def _65(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_scrubbed__):
 def __init__(self,id,at,actor,action,tenant,user,sessions,counts,scrubbed=__dataclass_dflt_scrubbed__):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'at',at)
  __dataclass_set__(self,'actor',actor)
  __dataclass_set__(self,'action',action)
  __dataclass_set__(self,'tenant',tenant)
  __dataclass_set__(self,'user',user)
  __dataclass_set__(self,'sessions',sessions)
  __dataclass_set__(self,'counts',counts)
  __dataclass_set__(self,'scrubbed',scrubbed)
 return __init__

def _66(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_seconds__,__dataclass_dflt_rounds__):
 def __init__(self,seconds=__dataclass_dflt_seconds__,rounds=__dataclass_dflt_rounds__):
  __dataclass_set__(self,'seconds',seconds)
  __dataclass_set__(self,'rounds',rounds)
 return __init__

def _67(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_session__,__dataclass_dflt_seq__,__dataclass_dflt_created_at__,__dataclass_dflt_page__):
 def __init__(self,text,source,kind,score,session=__dataclass_dflt_session__,seq=__dataclass_dflt_seq__,created_at=__dataclass_dflt_created_at__,page=__dataclass_dflt_page__):
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'source',source)
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'score',score)
  __dataclass_set__(self,'session',session)
  __dataclass_set__(self,'seq',seq)
  __dataclass_set__(self,'created_at',created_at)
  __dataclass_set__(self,'page',page)
 return __init__

def _68(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_session__,__dataclass_dflt_user__):
 def __init__(self,tenant,session=__dataclass_dflt_session__,user=__dataclass_dflt_user__):
  __dataclass_set__(self,'tenant',tenant)
  __dataclass_set__(self,'session',session)
  __dataclass_set__(self,'user',user)
 return __init__

def _69(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_sessions__,__dataclass_dflt_start__,__dataclass_dflt_end__,__dataclass_dflt_roles__,__dataclass_dflt_below__):
 def __init__(self,sessions=__dataclass_dflt_sessions__,start=__dataclass_dflt_start__,end=__dataclass_dflt_end__,roles=__dataclass_dflt_roles__,below=__dataclass_dflt_below__):
  __dataclass_set__(self,'sessions',sessions)
  __dataclass_set__(self,'start',start)
  __dataclass_set__(self,'end',end)
  __dataclass_set__(self,'roles',roles)
  __dataclass_set__(self,'below',below)
 return __init__

def _70(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_shards__,__dataclass_dflt_where__,__dataclass_dflt_args__,__dataclass_dflt_window__):
 def __init__(self,shards=__dataclass_dflt_shards__,where=__dataclass_dflt_where__,args=__dataclass_dflt_args__,window=__dataclass_dflt_window__):
  __dataclass_set__(self,'shards',shards)
  __dataclass_set__(self,'where',where)
  __dataclass_set__(self,'args',args)
  __dataclass_set__(self,'window',window)
 return __init__

def _71(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_shares__,__dataclass_dflt_prefix_tokens__,__dataclass_dflt_request_bytes__,__dataclass_dflt_events__,__dataclass_dflt_recipe__):
 def __init__(self,total_tokens,budget,sections,build_ms,messages,full_tokens,strategy,shares=__dataclass_factory__,prefix_tokens=__dataclass_dflt_prefix_tokens__,request_bytes=__dataclass_dflt_request_bytes__,events=__dataclass_dflt_events__,recipe=__dataclass_dflt_recipe__):
  __dataclass_set__(self,'total_tokens',total_tokens)
  __dataclass_set__(self,'budget',budget)
  __dataclass_set__(self,'sections',sections)
  __dataclass_set__(self,'build_ms',build_ms)
  __dataclass_set__(self,'messages',messages)
  __dataclass_set__(self,'full_tokens',full_tokens)
  __dataclass_set__(self,'strategy',strategy)
  __dataclass_set__(self,'shares',__dataclass_dflt_shares__() if shares is __dataclass_factory__ else shares)
  __dataclass_set__(self,'prefix_tokens',prefix_tokens)
  __dataclass_set__(self,'request_bytes',request_bytes)
  __dataclass_set__(self,'events',events)
  __dataclass_set__(self,'recipe',recipe)
 return __init__

def _72(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_shown_text__,__dataclass_dflt_history__):
 def __init__(self,session,body,client_tools,client_names,budget,shown_text=__dataclass_dflt_shown_text__,history=__dataclass_dflt_history__):
  self.session=session
  self.body=body
  self.client_tools=client_tools
  self.client_names=client_names
  self.budget=budget
  self.shown_text=shown_text
  self.history=history
 return __init__

def _73(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_state__,__dataclass_dflt_retrieval__,__dataclass_dflt_contract_title__,__dataclass_dflt_contract__,__dataclass_dflt_extra__):
 def __init__(self,state=__dataclass_dflt_state__,retrieval=__dataclass_dflt_retrieval__,contract_title=__dataclass_dflt_contract_title__,contract=__dataclass_dflt_contract__,extra=__dataclass_factory__):
  __dataclass_set__(self,'state',state)
  __dataclass_set__(self,'retrieval',retrieval)
  __dataclass_set__(self,'contract_title',contract_title)
  __dataclass_set__(self,'contract',contract)
  __dataclass_set__(self,'extra',__dataclass_dflt_extra__() if extra is __dataclass_factory__ else extra)
 return __init__

def _74(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_status__,__dataclass_dflt_body__,__dataclass_dflt_retry_after__):
 def __init__(self,kind,detail,retryable,status=__dataclass_dflt_status__,body=__dataclass_dflt_body__,retry_after=__dataclass_dflt_retry_after__):
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'detail',detail)
  __dataclass_set__(self,'retryable',retryable)
  __dataclass_set__(self,'status',status)
  __dataclass_set__(self,'body',body)
  __dataclass_set__(self,'retry_after',retry_after)
 return __init__

def _75(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_stop_reason__):
 def __init__(self,text,model,input_tokens,output_tokens,raw,stop_reason=__dataclass_dflt_stop_reason__):
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'model',model)
  __dataclass_set__(self,'input_tokens',input_tokens)
  __dataclass_set__(self,'output_tokens',output_tokens)
  __dataclass_set__(self,'raw',raw)
  __dataclass_set__(self,'stop_reason',stop_reason)
 return __init__

def _76(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_strict__,__dataclass_dflt_agent__,__dataclass_dflt_form__,__dataclass_dflt_original__):
 def __init__(self,name,description,parameters,strict=__dataclass_dflt_strict__,agent=__dataclass_dflt_agent__,form=__dataclass_dflt_form__,original=__dataclass_dflt_original__):
  __dataclass_set__(self,'name',name)
  __dataclass_set__(self,'description',description)
  __dataclass_set__(self,'parameters',parameters)
  __dataclass_set__(self,'strict',strict)
  __dataclass_set__(self,'agent',agent)
  __dataclass_set__(self,'form',form)
  __dataclass_set__(self,'original',original)
 return __init__

def _77(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_summary__,__dataclass_dflt_encrypted_content__,__dataclass_dflt_content__,__dataclass_dflt_kind__):
 def __init__(self,id,summary=__dataclass_dflt_summary__,encrypted_content=__dataclass_dflt_encrypted_content__,content=__dataclass_dflt_content__,kind=__dataclass_dflt_kind__):
  __dataclass_set__(self,'id',id)
  __dataclass_set__(self,'summary',summary)
  __dataclass_set__(self,'encrypted_content',encrypted_content)
  __dataclass_set__(self,'content',content)
  __dataclass_set__(self,'kind',kind)
 return __init__

def _78(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_symbol__):
 def __init__(self,kind,title,start_line,end_line,text,symbol=__dataclass_dflt_symbol__):
  __dataclass_set__(self,'kind',kind)
  __dataclass_set__(self,'title',title)
  __dataclass_set__(self,'start_line',start_line)
  __dataclass_set__(self,'end_line',end_line)
  __dataclass_set__(self,'text',text)
  __dataclass_set__(self,'symbol',symbol)
 return __init__

def _79(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_symbol__):
 def __init__(self,start,end,title,symbol=__dataclass_dflt_symbol__):
  self.start=start
  self.end=end
  self.title=title
  self.symbol=symbol
 return __init__

def _80(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_terms__,__dataclass_dflt_sql__,__dataclass_dflt_args__):
 def __init__(self,terms=__dataclass_dflt_terms__,sql=__dataclass_dflt_sql__,args=__dataclass_dflt_args__):
  __dataclass_set__(self,'terms',terms)
  __dataclass_set__(self,'sql',sql)
  __dataclass_set__(self,'args',args)
 return __init__

def _81(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_text__,__dataclass_dflt_calls__):
 def __init__(self,text=__dataclass_factory__,calls=__dataclass_factory__):
  self.text=__dataclass_dflt_text__() if text is __dataclass_factory__ else text
  self.calls=__dataclass_dflt_calls__() if calls is __dataclass_factory__ else calls
 return __init__

def _82(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_tools__,__dataclass_dflt_notes__,__dataclass_dflt_item__,__dataclass_dflt_items__,__dataclass_dflt_questions__):
 def __init__(self,format,messages,origins,tools=__dataclass_factory__,notes=__dataclass_factory__,item=__dataclass_dflt_item__,items=__dataclass_dflt_items__,questions=__dataclass_factory__):
  __dataclass_set__(self,'format',format)
  __dataclass_set__(self,'messages',messages)
  __dataclass_set__(self,'origins',origins)
  __dataclass_set__(self,'tools',__dataclass_dflt_tools__() if tools is __dataclass_factory__ else tools)
  __dataclass_set__(self,'notes',__dataclass_dflt_notes__() if notes is __dataclass_factory__ else notes)
  __dataclass_set__(self,'item',item)
  __dataclass_set__(self,'items',items)
  __dataclass_set__(self,'questions',__dataclass_dflt_questions__() if questions is __dataclass_factory__ else questions)
 return __init__

def _83(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_tools__,__dataclass_dflt_segments__,__dataclass_dflt_memory__):
 def __init__(self,messages,stats,tools=__dataclass_dflt_tools__,segments=__dataclass_dflt_segments__,memory=__dataclass_dflt_memory__):
  __dataclass_set__(self,'messages',messages)
  __dataclass_set__(self,'stats',stats)
  __dataclass_set__(self,'tools',tools)
  __dataclass_set__(self,'segments',segments)
  __dataclass_set__(self,'memory',memory)
 return __init__

def _84(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_user__,__dataclass_dflt_session_id__,__dataclass_dflt_session__):
 def __init__(self,level,tenant,user=__dataclass_dflt_user__,session_id=__dataclass_dflt_session_id__,session=__dataclass_dflt_session__):
  __dataclass_set__(self,'level',level)
  __dataclass_set__(self,'tenant',tenant)
  __dataclass_set__(self,'user',user)
  __dataclass_set__(self,'session_id',session_id)
  __dataclass_set__(self,'session',session)
  self.__post_init__()
 return __init__

def _85(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_values__):
 def __init__(self,paged,window,values=__dataclass_factory__):
  self.paged=paged
  self.window=window
  self.values=__dataclass_dflt_values__() if values is __dataclass_factory__ else values
 return __init__

def _86(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_version__,__dataclass_dflt_sessions__,__dataclass_dflt_behind__,__dataclass_dflt_item_lists__,__dataclass_dflt_items__,__dataclass_dflt_docs_from__):
 def __init__(self,version=__dataclass_dflt_version__,sessions=__dataclass_factory__,behind=__dataclass_factory__,item_lists=__dataclass_factory__,items=__dataclass_factory__,docs_from=__dataclass_factory__):
  self.version=version
  self.sessions=__dataclass_dflt_sessions__() if sessions is __dataclass_factory__ else sessions
  self.behind=__dataclass_dflt_behind__() if behind is __dataclass_factory__ else behind
  self.item_lists=__dataclass_dflt_item_lists__() if item_lists is __dataclass_factory__ else item_lists
  self.items=__dataclass_dflt_items__() if items is __dataclass_factory__ else items
  self.docs_from=__dataclass_dflt_docs_from__() if docs_from is __dataclass_factory__ else docs_from
 return __init__

def _87(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_whole__,__dataclass_dflt_blocks__):
 def __init__(self,recipe,limit,specs,specs_all_in,tools_tokens,agent,agent_tokens,head,room,caps,memory,shown,state,reserve,heads,whole=__dataclass_dflt_whole__,blocks=__dataclass_factory__):
  self.recipe=recipe
  self.limit=limit
  self.specs=specs
  self.specs_all_in=specs_all_in
  self.tools_tokens=tools_tokens
  self.agent=agent
  self.agent_tokens=agent_tokens
  self.head=head
  self.room=room
  self.caps=caps
  self.memory=memory
  self.shown=shown
  self.state=state
  self.reserve=reserve
  self.heads=heads
  self.whole=whole
  self.blocks=__dataclass_dflt_blocks__() if blocks is __dataclass_factory__ else blocks
 return __init__

def _88(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_writing__,__dataclass_dflt_items__,__dataclass_dflt_meta__,__dataclass_dflt_latest_event__,__dataclass_dflt_unsaved_events__,__dataclass_dflt_unsaved_meta__,__dataclass_dflt_unsaved_items__):
 def __init__(self,writing=__dataclass_dflt_writing__,items=__dataclass_dflt_items__,meta=__dataclass_factory__,latest_event=__dataclass_dflt_latest_event__,unsaved_events=__dataclass_factory__,unsaved_meta=__dataclass_factory__,unsaved_items=__dataclass_factory__):
  self.writing=writing
  self.items=items
  self.meta=__dataclass_dflt_meta__() if meta is __dataclass_factory__ else meta
  self.latest_event=latest_event
  self.unsaved_events=__dataclass_dflt_unsaved_events__() if unsaved_events is __dataclass_factory__ else unsaved_events
  self.unsaved_meta=__dataclass_dflt_unsaved_meta__() if unsaved_meta is __dataclass_factory__ else unsaved_meta
  self.unsaved_items=__dataclass_dflt_unsaved_items__() if unsaved_items is __dataclass_factory__ else unsaved_items
 return __init__

def _89(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_y_min__):
 def __init__(self,width,height,left,right,top,bottom,n,y_max,y_min=__dataclass_dflt_y_min__):
  __dataclass_set__(self,'width',width)
  __dataclass_set__(self,'height',height)
  __dataclass_set__(self,'left',left)
  __dataclass_set__(self,'right',right)
  __dataclass_set__(self,'top',top)
  __dataclass_set__(self,'bottom',bottom)
  __dataclass_set__(self,'n',n)
  __dataclass_set__(self,'y_max',y_max)
  __dataclass_set__(self,'y_min',y_min)
 return __init__

def _90(_tuple_new):
 return lambda _cls, analyzer, messages, embedder, vectors, vector_backend: _tuple_new(_cls, (analyzer, messages, embedder, vectors, vector_backend))

def _91(_tuple_new):
 return lambda _cls, candidates, saved, gathered, around: _tuple_new(_cls, (candidates, saved, gathered, around))

def _92(_tuple_new):
 return lambda _cls, content, sha256, size, chars, lines, exit_code, summary, tool_name, arguments, stored, file_written: _tuple_new(_cls, (content, sha256, size, chars, lines, exit_code, summary, tool_name, arguments, stored, file_written))

def _93(_tuple_new):
 return lambda _cls, context_window, provider, encoding: _tuple_new(_cls, (context_window, provider, encoding))

def _94(_tuple_new):
 return lambda _cls, doc, session_id, message: _tuple_new(_cls, (doc, session_id, message))

def _95(_tuple_new):
 return lambda _cls, doc, session_id, seq: _tuple_new(_cls, (doc, session_id, seq))

def _96(_tuple_new):
 return lambda _cls, entries, first, last, ids: _tuple_new(_cls, (entries, first, last, ids))

def _97(_tuple_new):
 return lambda _cls, epoch, last_seq, held, system_seq, raw_total, has_tool_results, hides_output, seqs, roles, tokens, cum, page_starts: _tuple_new(_cls, (epoch, last_seq, held, system_seq, raw_total, has_tool_results, hides_output, seqs, roles, tokens, cum, page_starts))

def _98(_tuple_new):
 return lambda _cls, epoch, seq, said, page, context: _tuple_new(_cls, (epoch, seq, said, page, context))

def _99(_tuple_new):
 return lambda _cls, file_roots, max_message_bytes: _tuple_new(_cls, (file_roots, max_message_bytes))

def _100(_tuple_new):
 return lambda _cls, id, kind, key, payload, state, attempts, max_attempts, last_error, result, lease_owner, lease_expires, run_after, created_at, updated_at: _tuple_new(_cls, (id, kind, key, payload, state, attempts, max_attempts, last_error, result, lease_owner, lease_expires, run_after, created_at, updated_at))

def _101(_tuple_new):
 return lambda _cls, id, path, kind, mtime_ns, size, sha256: _tuple_new(_cls, (id, path, kind, mtime_ns, size, sha256))

def _102(_tuple_new):
 return lambda _cls, id, path, start_line, end_line, title, symbol, kind, text: _tuple_new(_cls, (id, path, start_line, end_line, title, symbol, kind, text))

def _103(_tuple_new):
 return lambda _cls, id, sha256, size, chars, lines, content: _tuple_new(_cls, (id, sha256, size, chars, lines, content))

def _104(_tuple_new):
 return lambda _cls, id, size, chars, lines, exit_code, summary, tool_name, call_id, arguments, owner, session_id, created_at, stored, sha256, is_error, seq: _tuple_new(_cls, (id, size, chars, lines, exit_code, summary, tool_name, call_id, arguments, owner, session_id, created_at, stored, sha256, is_error, seq))

def _105(_tuple_new):
 return lambda _cls, key_id, tenant, key_hash, label, created_at, revoked_at, policy: _tuple_new(_cls, (key_id, tenant, key_hash, label, created_at, revoked_at, policy))

def _106(_tuple_new):
 return lambda _cls, kind, key, payload, max_attempts, run_after: _tuple_new(_cls, (kind, key, payload, max_attempts, run_after))

def _107(_tuple_new):
 return lambda _cls, low_watermark, evict_unrecalled_rounds, evict_unchanged_rounds, contents_max_tokens, contents_entry_lines, language, recent_max_tokens, recent_pages, summary_swap_rounds: _tuple_new(_cls, (low_watermark, evict_unrecalled_rounds, evict_unchanged_rounds, contents_max_tokens, contents_entry_lines, language, recent_max_tokens, recent_pages, summary_swap_rounds))

def _108(_tuple_new):
 return lambda _cls, match, terms, short_terms: _tuple_new(_cls, (match, terms, short_terms))

def _109(_tuple_new):
 return lambda _cls, message, keys, opener: _tuple_new(_cls, (message, keys, opener))

def _110(_tuple_new):
 return lambda _cls, name, priority, tokens, required: _tuple_new(_cls, (name, priority, tokens, required))

def _111(_tuple_new):
 return lambda _cls, name, sections, recent_steps, tool_head: _tuple_new(_cls, (name, sections, recent_steps, tool_head))

def _112(_tuple_new):
 return lambda _cls, name, shares: _tuple_new(_cls, (name, shares))

def _113(_tuple_new):
 return lambda _cls, node,: _tuple_new(_cls, (node,))

def _114(_tuple_new):
 return lambda _cls, ok, text: _tuple_new(_cls, (ok, text))

def _115(_tuple_new):
 return lambda _cls, page, epoch, recent: _tuple_new(_cls, (page, epoch, recent))

def _116(_tuple_new):
 return lambda _cls, page, first_seq, last_seq, state, archived_round, recall_count, last_recall_round, lines, source, tokens, counted: _tuple_new(_cls, (page, first_seq, last_seq, state, archived_round, recall_count, last_recall_round, lines, source, tokens, counted))

def _117(_tuple_new):
 return lambda _cls, parts, aside: _tuple_new(_cls, (parts, aside))

def _118(_tuple_new):
 return lambda _cls, pattern, read, needs: _tuple_new(_cls, (pattern, read, needs))

def _119(_tuple_new):
 return lambda _cls, pending, failed, gave_up, last_error: _tuple_new(_cls, (pending, failed, gave_up, last_error))

def _120(_tuple_new):
 return lambda _cls, position, prepared: _tuple_new(_cls, (position, prepared))

def _121(_tuple_new):
 return lambda _cls, provider, per_message, per_name, per_tool_call, per_tool_result, image_low, image, reply_priming: _tuple_new(_cls, (provider, per_message, per_name, per_tool_call, per_tool_result, image_low, image, reply_priming))

def _122(_tuple_new):
 return lambda _cls, round, kind, page, reason, last_page, at: _tuple_new(_cls, (round, kind, page, reason, last_page, at))

def _123(_tuple_new):
 return lambda _cls, scope, kind, subject, text, norm, summary, source, page, valid_from, created: _tuple_new(_cls, (scope, kind, subject, text, norm, summary, source, page, valid_from, created))

def _124(_tuple_new):
 return lambda _cls, scope, kinds, exclude_kinds, current: _tuple_new(_cls, (scope, kinds, exclude_kinds, current))

def _125(_tuple_new):
 return lambda _cls, seq, role, tokens, shown: _tuple_new(_cls, (seq, role, tokens, shown))

def _126(_tuple_new):
 return lambda _cls, seqs, first_page, pages, call_ids, artifacts: _tuple_new(_cls, (seqs, first_page, pages, call_ids, artifacts))

def _127(_tuple_new):
 return lambda _cls, seqs, roles, tokens, shown: _tuple_new(_cls, (seqs, roles, tokens, shown))

def _128(_tuple_new):
 return lambda _cls, session_id, seq, role, page, created, text, context: _tuple_new(_cls, (session_id, seq, role, page, created, text, context))

def _129(_tuple_new):
 return lambda _cls, size, rare, common, counted: _tuple_new(_cls, (size, rare, common, counted))

def _130(_tuple_new):
 return lambda _cls, stored, artifact, text: _tuple_new(_cls, (stored, artifact, text))

def _131(_tuple_new):
 return lambda _cls, terms, numbers, paths, idents, entities, question, filler, columns: _tuple_new(_cls, (terms, numbers, paths, idents, entities, question, filler, columns))

def _132(_tuple_new):
 return lambda _cls, text, subject, source, summary, page, at: _tuple_new(_cls, (text, subject, source, summary, page, at))

def _133(_tuple_new):
 return lambda _cls, title, lines, form: _tuple_new(_cls, (title, lines, form))

def _134(_tuple_new):
 return lambda _cls, title, lines, source, form: _tuple_new(_cls, (title, lines, source, form))

def _135(_tuple_new):
 return lambda _cls, version, epoch, last_seq, work_event: _tuple_new(_cls, (version, epoch, last_seq, work_event))

def _136(_tuple_new):
 return lambda _cls, version, name, sql: _tuple_new(_cls, (version, name, sql))

def _137(_tuple_new):
 return lambda _cls, window, window_tokens, specs, tools_tokens, head: _tuple_new(_cls, (window, window_tokens, specs, tools_tokens, head))

INITS = {
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,engine,config,keys,policy,hub,tool_threads,proxy,mcp):\n  __dataclass_set__(self,'engine',engine)\n  __dataclass_set__(self,'config',config)\n  __dataclass_set__(self,'keys',keys)\n  __dataclass_set__(self,'policy',policy)\n  __dataclass_set__(self,'hub',hub)\n  __dataclass_set__(self,'tool_threads',tool_threads)\n  __dataclass_set__(self,'proxy',proxy)\n  __dataclass_set__(self,'mcp',mcp)\n return __init__": _0,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,files_seen,files_indexed,files_unchanged,files_removed,files_skipped,chunks_written,seconds):\n  __dataclass_set__(self,'files_seen',files_seen)\n  __dataclass_set__(self,'files_indexed',files_indexed)\n  __dataclass_set__(self,'files_unchanged',files_unchanged)\n  __dataclass_set__(self,'files_removed',files_removed)\n  __dataclass_set__(self,'files_skipped',files_skipped)\n  __dataclass_set__(self,'chunks_written',chunks_written)\n  __dataclass_set__(self,'seconds',seconds)\n return __init__": _1,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,find,names):\n  __dataclass_set__(self,'find',find)\n  __dataclass_set__(self,'names',names)\n return __init__": _2,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,scope,tenant,user,session_id,kind,subject,text,summary,source,page,seen,valid_from,valid_to,superseded_by,created,updated):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'scope',scope)\n  __dataclass_set__(self,'tenant',tenant)\n  __dataclass_set__(self,'user',user)\n  __dataclass_set__(self,'session_id',session_id)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'subject',subject)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'summary',summary)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'page',page)\n  __dataclass_set__(self,'seen',seen)\n  __dataclass_set__(self,'valid_from',valid_from)\n  __dataclass_set__(self,'valid_to',valid_to)\n  __dataclass_set__(self,'superseded_by',superseded_by)\n  __dataclass_set__(self,'created',created)\n  __dataclass_set__(self,'updated',updated)\n return __init__": _3,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,section,text,source,covers,pos,created_at,actor):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'section',section)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'covers',covers)\n  __dataclass_set__(self,'pos',pos)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'actor',actor)\n return __init__": _4,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,session_id,at,actor,action,target,before,after,reverts):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'session_id',session_id)\n  __dataclass_set__(self,'at',at)\n  __dataclass_set__(self,'actor',actor)\n  __dataclass_set__(self,'action',action)\n  __dataclass_set__(self,'target',target)\n  __dataclass_set__(self,'before',before)\n  __dataclass_set__(self,'after',after)\n  __dataclass_set__(self,'reverts',reverts)\n return __init__": _5,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,summary,source,artifact_ref,milestone,covers,pos,created_at,actor):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'summary',summary)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'artifact_ref',artifact_ref)\n  __dataclass_set__(self,'milestone',milestone)\n  __dataclass_set__(self,'covers',covers)\n  __dataclass_set__(self,'pos',pos)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'actor',actor)\n return __init__": _6,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,tenant,name,user,settings,created_at):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'tenant',tenant)\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'user',user)\n  __dataclass_set__(self,'settings',settings)\n  __dataclass_set__(self,'created_at',created_at)\n return __init__": _7,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,text,done,source,created_at,updated_at,actor):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'done',done)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'updated_at',updated_at)\n  __dataclass_set__(self,'actor',actor)\n return __init__": _8,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,id,type,title,summary,source,artifact_ref,ttl,created_at,updated_at,created_round,expires_at,expires_round,actor):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'type',type)\n  __dataclass_set__(self,'title',title)\n  __dataclass_set__(self,'summary',summary)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'artifact_ref',artifact_ref)\n  __dataclass_set__(self,'ttl',ttl)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'updated_at',updated_at)\n  __dataclass_set__(self,'created_round',created_round)\n  __dataclass_set__(self,'expires_at',expires_at)\n  __dataclass_set__(self,'expires_round',expires_round)\n  __dataclass_set__(self,'actor',actor)\n return __init__": _9,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,kind,state,count,retried,with_errors):\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'state',state)\n  __dataclass_set__(self,'count',count)\n  __dataclass_set__(self,'retried',retried)\n  __dataclass_set__(self,'with_errors',with_errors)\n return __init__": _10,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,limits,round,next_ids,items,refs):\n  __dataclass_set__(self,'limits',limits)\n  __dataclass_set__(self,'round',round)\n  __dataclass_set__(self,'next_ids',next_ids)\n  __dataclass_set__(self,'items',items)\n  __dataclass_set__(self,'refs',refs)\n return __init__": _11,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,message,text,evidence):\n  __dataclass_set__(self,'message',message)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'evidence',evidence)\n return __init__": _12,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,name,start,stop,tokens):\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'start',start)\n  __dataclass_set__(self,'stop',stop)\n  __dataclass_set__(self,'tokens',tokens)\n return __init__": _13,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,name,summary,conversations,read):\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'summary',summary)\n  __dataclass_set__(self,'conversations',conversations)\n  __dataclass_set__(self,'read',read)\n return __init__": _14,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,number,text):\n  self.number=number\n  self.text=text\n return __init__': _15,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,path,start_line,end_line,title,symbol,kind,text,score,retrievers):\n  __dataclass_set__(self,'path',path)\n  __dataclass_set__(self,'start_line',start_line)\n  __dataclass_set__(self,'end_line',end_line)\n  __dataclass_set__(self,'title',title)\n  __dataclass_set__(self,'symbol',symbol)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'score',score)\n  __dataclass_set__(self,'retrievers',retrievers)\n return __init__": _16,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,question,evidence,verbatim,close):\n  __dataclass_set__(self,'question',question)\n  __dataclass_set__(self,'evidence',evidence)\n  __dataclass_set__(self,'verbatim',verbatim)\n  __dataclass_set__(self,'close',close)\n return __init__": _17,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,request,seq,kind,page,text,reason):\n  __dataclass_set__(self,'request',request)\n  __dataclass_set__(self,'seq',seq)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'page',page)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'reason',reason)\n return __init__": _18,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,spec,handler):\n  __dataclass_set__(self,'spec',spec)\n  __dataclass_set__(self,'handler',handler)\n return __init__": _19,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,table,source,target):\n  __dataclass_set__(self,'table',table)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'target',target)\n return __init__": _20,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,terms,rows,hits):\n  __dataclass_set__(self,'terms',terms)\n  __dataclass_set__(self,'rows',rows)\n  __dataclass_set__(self,'hits',hits)\n return __init__": _21,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__):\n def __init__(self,url,headers,content):\n  __dataclass_set__(self,'url',url)\n  __dataclass_set__(self,'headers',headers)\n  __dataclass_set__(self,'content',content)\n return __init__": _22,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_after__,__dataclass_dflt_kind__):\n def __init__(self,start,after=__dataclass_dflt_after__,kind=__dataclass_dflt_kind__):\n  __dataclass_set__(self,'start',start)\n  __dataclass_set__(self,'after',after)\n  __dataclass_set__(self,'kind',kind)\n return __init__": _23,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_arguments__,__dataclass_dflt_id__):\n def __init__(self,name,arguments=__dataclass_dflt_arguments__,id=__dataclass_dflt_id__):\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'arguments',arguments)\n  __dataclass_set__(self,'id',id)\n return __init__": _24,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_arguments__,__dataclass_dflt_kind__,__dataclass_dflt_item_id__):\n def __init__(self,id,name,arguments=__dataclass_dflt_arguments__,kind=__dataclass_dflt_kind__,item_id=__dataclass_dflt_item_id__):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'arguments',arguments)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'item_id',item_id)\n return __init__": _25,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_blocks__):\n def __init__(self,role,blocks=__dataclass_factory__):\n  self.role=role\n  self.blocks=__dataclass_dflt_blocks__() if blocks is __dataclass_factory__ else blocks\n return __init__': _26,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_busy__,__dataclass_dflt_last__):\n def __init__(self,id,key,tenant,owner,busy=__dataclass_dflt_busy__,last=__dataclass_dflt_last__):\n  self.id=id\n  self.key=key\n  self.tenant=tenant\n  self.owner=owner\n  self.busy=busy\n  self.last=last\n return __init__': _27,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_cached__):\n def __init__(self,query,episodes,preferences,elapsed_ms,cached=__dataclass_dflt_cached__):\n  __dataclass_set__(self,'query',query)\n  __dataclass_set__(self,'episodes',episodes)\n  __dataclass_set__(self,'preferences',preferences)\n  __dataclass_set__(self,'elapsed_ms',elapsed_ms)\n  __dataclass_set__(self,'cached',cached)\n return __init__": _28,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_carry__,__dataclass_dflt_keeps_most__,__dataclass_dflt_refs__):\n def __init__(self,join,where,args,shards,carry=__dataclass_dflt_carry__,keeps_most=__dataclass_dflt_keeps_most__,refs=__dataclass_dflt_refs__):\n  __dataclass_set__(self,'join',join)\n  __dataclass_set__(self,'where',where)\n  __dataclass_set__(self,'args',args)\n  __dataclass_set__(self,'shards',shards)\n  __dataclass_set__(self,'carry',carry)\n  __dataclass_set__(self,'keeps_most',keeps_most)\n  __dataclass_set__(self,'refs',refs)\n return __init__": _29,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_closing__,__dataclass_dflt_refused__):\n def __init__(self,key,tenant,closing=__dataclass_factory__,refused=__dataclass_dflt_refused__):\n  self.key=key\n  self.tenant=tenant\n  self.closing=__dataclass_dflt_closing__() if closing is __dataclass_factory__ else closing\n  self.refused=refused\n return __init__': _30,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_counts__,__dataclass_dflt_files__):\n def __init__(self,counts=__dataclass_factory__,files=__dataclass_dflt_files__):\n  __dataclass_set__(self,'counts',__dataclass_dflt_counts__() if counts is __dataclass_factory__ else counts)\n  __dataclass_set__(self,'files',files)\n return __init__": _31,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_detail__,__dataclass_dflt_recall_count__,__dataclass_dflt_last_recall_round__,__dataclass_dflt_archived_round__):\n def __init__(self,page,first_seq,last_seq,messages,tokens,place,detail=__dataclass_dflt_detail__,recall_count=__dataclass_dflt_recall_count__,last_recall_round=__dataclass_dflt_last_recall_round__,archived_round=__dataclass_dflt_archived_round__):\n  __dataclass_set__(self,'page',page)\n  __dataclass_set__(self,'first_seq',first_seq)\n  __dataclass_set__(self,'last_seq',last_seq)\n  __dataclass_set__(self,'messages',messages)\n  __dataclass_set__(self,'tokens',tokens)\n  __dataclass_set__(self,'place',place)\n  __dataclass_set__(self,'detail',detail)\n  __dataclass_set__(self,'recall_count',recall_count)\n  __dataclass_set__(self,'last_recall_round',last_recall_round)\n  __dataclass_set__(self,'archived_round',archived_round)\n return __init__": _32,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_event__):\n def __init__(self,draft,event=__dataclass_dflt_event__):\n  self.draft=draft\n  self.event=event\n return __init__': _33,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_events__,__dataclass_dflt_full_cached_tokens__,__dataclass_dflt_segments__,__dataclass_dflt_evidence__,__dataclass_dflt_own_tokens__):\n def __init__(self,number,seq,memci_tokens,full_tokens,build_ms,prefix_tokens,events=__dataclass_dflt_events__,full_cached_tokens=__dataclass_dflt_full_cached_tokens__,segments=__dataclass_factory__,evidence=__dataclass_dflt_evidence__,own_tokens=__dataclass_dflt_own_tokens__):\n  __dataclass_set__(self,'number',number)\n  __dataclass_set__(self,'seq',seq)\n  __dataclass_set__(self,'memci_tokens',memci_tokens)\n  __dataclass_set__(self,'full_tokens',full_tokens)\n  __dataclass_set__(self,'build_ms',build_ms)\n  __dataclass_set__(self,'prefix_tokens',prefix_tokens)\n  __dataclass_set__(self,'events',events)\n  __dataclass_set__(self,'full_cached_tokens',full_cached_tokens)\n  __dataclass_set__(self,'segments',__dataclass_dflt_segments__() if segments is __dataclass_factory__ else segments)\n  __dataclass_set__(self,'evidence',evidence)\n  __dataclass_set__(self,'own_tokens',own_tokens)\n return __init__": _34,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_facts__,__dataclass_dflt_source__):\n def __init__(self,eligible,kind,reason,facts=__dataclass_factory__,source=__dataclass_dflt_source__):\n  __dataclass_set__(self,'eligible',eligible)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'reason',reason)\n  __dataclass_set__(self,'facts',__dataclass_dflt_facts__() if facts is __dataclass_factory__ else facts)\n  __dataclass_set__(self,'source',source)\n return __init__": _35,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_file_roots__,__dataclass_dflt_max_message_bytes__):\n def __init__(self,file_roots=__dataclass_dflt_file_roots__,max_message_bytes=__dataclass_dflt_max_message_bytes__):\n  __dataclass_set__(self,'file_roots',file_roots)\n  __dataclass_set__(self,'max_message_bytes',max_message_bytes)\n  self.__post_init__()\n return __init__": _36,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_history__):\n def __init__(self,head,tail,whole,history=__dataclass_dflt_history__):\n  __dataclass_set__(self,'head',head)\n  __dataclass_set__(self,'tail',tail)\n  __dataclass_set__(self,'whole',whole)\n  __dataclass_set__(self,'history',history)\n return __init__": _37,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_is_error__,__dataclass_dflt_kind__):\n def __init__(self,call_id,content,is_error=__dataclass_dflt_is_error__,kind=__dataclass_dflt_kind__):\n  __dataclass_set__(self,'call_id',call_id)\n  __dataclass_set__(self,'content',content)\n  __dataclass_set__(self,'is_error',is_error)\n  __dataclass_set__(self,'kind',kind)\n return __init__": _38,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_item__):\n def __init__(self,message,page,score,retrievers,session,item=__dataclass_dflt_item__):\n  __dataclass_set__(self,'message',message)\n  __dataclass_set__(self,'page',page)\n  __dataclass_set__(self,'score',score)\n  __dataclass_set__(self,'retrievers',retrievers)\n  __dataclass_set__(self,'session',session)\n  __dataclass_set__(self,'item',item)\n return __init__": _39,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_items__,__dataclass_dflt_size__):\n def __init__(self,budget,items=__dataclass_factory__,size=__dataclass_dflt_size__):\n  self.budget=budget\n  self.items=__dataclass_dflt_items__() if items is __dataclass_factory__ else items\n  self.size=size\n return __init__': _40,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_jobs_pending__,__dataclass_dflt_jobs_failed__,__dataclass_dflt_jobs_gave_up__,__dataclass_dflt_jobs_last_error__):\n def __init__(self,messages,pages,builds,mean_build_ms,tokens_saved,archived,recalled,evicted,jobs_pending=__dataclass_dflt_jobs_pending__,jobs_failed=__dataclass_dflt_jobs_failed__,jobs_gave_up=__dataclass_dflt_jobs_gave_up__,jobs_last_error=__dataclass_dflt_jobs_last_error__):\n  __dataclass_set__(self,'messages',messages)\n  __dataclass_set__(self,'pages',pages)\n  __dataclass_set__(self,'builds',builds)\n  __dataclass_set__(self,'mean_build_ms',mean_build_ms)\n  __dataclass_set__(self,'tokens_saved',tokens_saved)\n  __dataclass_set__(self,'archived',archived)\n  __dataclass_set__(self,'recalled',recalled)\n  __dataclass_set__(self,'evicted',evicted)\n  __dataclass_set__(self,'jobs_pending',jobs_pending)\n  __dataclass_set__(self,'jobs_failed',jobs_failed)\n  __dataclass_set__(self,'jobs_gave_up',jobs_gave_up)\n  __dataclass_set__(self,'jobs_last_error',jobs_last_error)\n return __init__": _41,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_kind__,__dataclass_dflt_item_id__):\n def __init__(self,text,kind=__dataclass_dflt_kind__,item_id=__dataclass_dflt_item_id__):\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'item_id',item_id)\n return __init__": _42,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_label__):\n def __init__(self,start,end,label=__dataclass_dflt_label__):\n  __dataclass_set__(self,'start',start)\n  __dataclass_set__(self,'end',end)\n  __dataclass_set__(self,'label',label)\n  self.__post_init__()\n return __init__": _43,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_line__):\n def __init__(self,index,text,features,score,line=__dataclass_dflt_line__):\n  __dataclass_set__(self,'index',index)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'features',features)\n  __dataclass_set__(self,'score',score)\n  __dataclass_set__(self,'line',line)\n return __init__": _44,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_max_body_bytes__,__dataclass_dflt_auth__,__dataclass_dflt_default_tenant__,__dataclass_dflt_upstream_base_url__,__dataclass_dflt_upstream_api_key__,__dataclass_dflt_upstream_anthropic_base_url__,__dataclass_dflt_upstream_anthropic_api_key__,__dataclass_dflt_upstream_timeout__,__dataclass_dflt_max_tool_rounds__,__dataclass_dflt_file_roots__,__dataclass_dflt_max_message_bytes__,__dataclass_dflt_max_response_bytes__,__dataclass_dflt_header_timeout__,__dataclass_dflt_body_timeout__,__dataclass_dflt_max_connections_per_client__,__dataclass_dflt_max_connections__,__dataclass_dflt_mcp_sessions_per_key__,__dataclass_dflt_mcp_sessions_per_tenant__,__dataclass_dflt_mcp_sessions__,__dataclass_dflt_mcp_idle_seconds__,__dataclass_dflt_allowed_origins__,__dataclass_dflt_allowed_hosts__):\n def __init__(self,max_body_bytes=__dataclass_dflt_max_body_bytes__,auth=__dataclass_dflt_auth__,default_tenant=__dataclass_dflt_default_tenant__,upstream_base_url=__dataclass_dflt_upstream_base_url__,upstream_api_key=__dataclass_dflt_upstream_api_key__,upstream_anthropic_base_url=__dataclass_dflt_upstream_anthropic_base_url__,upstream_anthropic_api_key=__dataclass_dflt_upstream_anthropic_api_key__,upstream_timeout=__dataclass_dflt_upstream_timeout__,max_tool_rounds=__dataclass_dflt_max_tool_rounds__,file_roots=__dataclass_dflt_file_roots__,max_message_bytes=__dataclass_dflt_max_message_bytes__,max_response_bytes=__dataclass_dflt_max_response_bytes__,header_timeout=__dataclass_dflt_header_timeout__,body_timeout=__dataclass_dflt_body_timeout__,max_connections_per_client=__dataclass_dflt_max_connections_per_client__,max_connections=__dataclass_dflt_max_connections__,mcp_sessions_per_key=__dataclass_dflt_mcp_sessions_per_key__,mcp_sessions_per_tenant=__dataclass_dflt_mcp_sessions_per_tenant__,mcp_sessions=__dataclass_dflt_mcp_sessions__,mcp_idle_seconds=__dataclass_dflt_mcp_idle_seconds__,allowed_origins=__dataclass_dflt_allowed_origins__,allowed_hosts=__dataclass_dflt_allowed_hosts__):\n  __dataclass_set__(self,'max_body_bytes',max_body_bytes)\n  __dataclass_set__(self,'auth',auth)\n  __dataclass_set__(self,'default_tenant',default_tenant)\n  __dataclass_set__(self,'upstream_base_url',upstream_base_url)\n  __dataclass_set__(self,'upstream_api_key',upstream_api_key)\n  __dataclass_set__(self,'upstream_anthropic_base_url',upstream_anthropic_base_url)\n  __dataclass_set__(self,'upstream_anthropic_api_key',upstream_anthropic_api_key)\n  __dataclass_set__(self,'upstream_timeout',upstream_timeout)\n  __dataclass_set__(self,'max_tool_rounds',max_tool_rounds)\n  __dataclass_set__(self,'file_roots',file_roots)\n  __dataclass_set__(self,'max_message_bytes',max_message_bytes)\n  __dataclass_set__(self,'max_response_bytes',max_response_bytes)\n  __dataclass_set__(self,'header_timeout',header_timeout)\n  __dataclass_set__(self,'body_timeout',body_timeout)\n  __dataclass_set__(self,'max_connections_per_client',max_connections_per_client)\n  __dataclass_set__(self,'max_connections',max_connections)\n  __dataclass_set__(self,'mcp_sessions_per_key',mcp_sessions_per_key)\n  __dataclass_set__(self,'mcp_sessions_per_tenant',mcp_sessions_per_tenant)\n  __dataclass_set__(self,'mcp_sessions',mcp_sessions)\n  __dataclass_set__(self,'mcp_idle_seconds',mcp_idle_seconds)\n  __dataclass_set__(self,'allowed_origins',allowed_origins)\n  __dataclass_set__(self,'allowed_hosts',allowed_hosts)\n  self.__post_init__()\n return __init__": _45,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_media_type__,__dataclass_dflt_detail__,__dataclass_dflt_kind__):\n def __init__(self,url,media_type=__dataclass_dflt_media_type__,detail=__dataclass_dflt_detail__,kind=__dataclass_dflt_kind__):\n  __dataclass_set__(self,'url',url)\n  __dataclass_set__(self,'media_type',media_type)\n  __dataclass_set__(self,'detail',detail)\n  __dataclass_set__(self,'kind',kind)\n return __init__": _46,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_model__,__dataclass_dflt_provider__,__dataclass_dflt_context_window__,__dataclass_dflt_reserve_ratio__,__dataclass_dflt_strategy__,__dataclass_dflt_tokenizer__,__dataclass_dflt_max_messages__,__dataclass_dflt_max_tokens__,__dataclass_dflt_max_message_bytes__,__dataclass_dflt_max_request_bytes__,__dataclass_dflt_file_roots__,__dataclass_dflt_language__,__dataclass_dflt_archive_low_watermark__,__dataclass_dflt_evict_unrecalled_rounds__,__dataclass_dflt_evict_unchanged_rounds__,__dataclass_dflt_contents_max_tokens__,__dataclass_dflt_contents_entry_lines__,__dataclass_dflt_tool_head_tokens__,__dataclass_dflt_keep_rounds__,__dataclass_dflt_tool_loop_tokens__,__dataclass_dflt_ctx_recent_max_tokens__,__dataclass_dflt_summary_swap_rounds__,__dataclass_dflt_retrieval__,__dataclass_dflt_tools__):\n def __init__(self,model=__dataclass_dflt_model__,provider=__dataclass_dflt_provider__,context_window=__dataclass_dflt_context_window__,reserve_ratio=__dataclass_dflt_reserve_ratio__,strategy=__dataclass_dflt_strategy__,tokenizer=__dataclass_dflt_tokenizer__,max_messages=__dataclass_dflt_max_messages__,max_tokens=__dataclass_dflt_max_tokens__,max_message_bytes=__dataclass_dflt_max_message_bytes__,max_request_bytes=__dataclass_dflt_max_request_bytes__,file_roots=__dataclass_factory__,language=__dataclass_dflt_language__,archive_low_watermark=__dataclass_dflt_archive_low_watermark__,evict_unrecalled_rounds=__dataclass_dflt_evict_unrecalled_rounds__,evict_unchanged_rounds=__dataclass_dflt_evict_unchanged_rounds__,contents_max_tokens=__dataclass_dflt_contents_max_tokens__,contents_entry_lines=__dataclass_dflt_contents_entry_lines__,tool_head_tokens=__dataclass_dflt_tool_head_tokens__,keep_rounds=__dataclass_dflt_keep_rounds__,tool_loop_tokens=__dataclass_dflt_tool_loop_tokens__,ctx_recent_max_tokens=__dataclass_dflt_ctx_recent_max_tokens__,summary_swap_rounds=__dataclass_dflt_summary_swap_rounds__,retrieval=__dataclass_dflt_retrieval__,tools=__dataclass_dflt_tools__):\n  __dataclass_set__(self,'model',model)\n  __dataclass_set__(self,'provider',provider)\n  __dataclass_set__(self,'context_window',context_window)\n  __dataclass_set__(self,'reserve_ratio',reserve_ratio)\n  __dataclass_set__(self,'strategy',strategy)\n  __dataclass_set__(self,'tokenizer',tokenizer)\n  __dataclass_set__(self,'max_messages',max_messages)\n  __dataclass_set__(self,'max_tokens',max_tokens)\n  __dataclass_set__(self,'max_message_bytes',max_message_bytes)\n  __dataclass_set__(self,'max_request_bytes',max_request_bytes)\n  __dataclass_set__(self,'file_roots',__dataclass_dflt_file_roots__() if file_roots is __dataclass_factory__ else file_roots)\n  __dataclass_set__(self,'language',language)\n  __dataclass_set__(self,'archive_low_watermark',archive_low_watermark)\n  __dataclass_set__(self,'evict_unrecalled_rounds',evict_unrecalled_rounds)\n  __dataclass_set__(self,'evict_unchanged_rounds',evict_unchanged_rounds)\n  __dataclass_set__(self,'contents_max_tokens',contents_max_tokens)\n  __dataclass_set__(self,'contents_entry_lines',contents_entry_lines)\n  __dataclass_set__(self,'tool_head_tokens',tool_head_tokens)\n  __dataclass_set__(self,'keep_rounds',keep_rounds)\n  __dataclass_set__(self,'tool_loop_tokens',tool_loop_tokens)\n  __dataclass_set__(self,'ctx_recent_max_tokens',ctx_recent_max_tokens)\n  __dataclass_set__(self,'summary_swap_rounds',summary_swap_rounds)\n  __dataclass_set__(self,'retrieval',retrieval)\n  __dataclass_set__(self,'tools',tools)\n return __init__": _47,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_name__,__dataclass_dflt_metadata__,__dataclass_dflt_created_at__,__dataclass_dflt_session__,__dataclass_dflt_seq__,__dataclass_dflt_tokens__):\n def __init__(self,role,parts,name=__dataclass_dflt_name__,metadata=__dataclass_factory__,created_at=__dataclass_dflt_created_at__,session=__dataclass_dflt_session__,seq=__dataclass_dflt_seq__,tokens=__dataclass_dflt_tokens__):\n  __dataclass_set__(self,'role',role)\n  __dataclass_set__(self,'parts',parts)\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'metadata',__dataclass_dflt_metadata__() if metadata is __dataclass_factory__ else metadata)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'session',session)\n  __dataclass_set__(self,'seq',seq)\n  __dataclass_set__(self,'tokens',tokens)\n return __init__": _48,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_origins__,__dataclass_dflt_hosts__):\n def __init__(self,origins=__dataclass_dflt_origins__,hosts=__dataclass_dflt_hosts__):\n  __dataclass_set__(self,'origins',origins)\n  __dataclass_set__(self,'hosts',hosts)\n return __init__": _49,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pages__,__dataclass_dflt_counts__,__dataclass_dflt_values__):\n def __init__(self,version,pages=__dataclass_dflt_pages__,counts=__dataclass_factory__,values=__dataclass_factory__):\n  __dataclass_set__(self,'version',version)\n  __dataclass_set__(self,'pages',pages)\n  __dataclass_set__(self,'counts',__dataclass_dflt_counts__() if counts is __dataclass_factory__ else counts)\n  __dataclass_set__(self,'values',__dataclass_dflt_values__() if values is __dataclass_factory__ else values)\n return __init__": _50,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pages__,__dataclass_dflt_events__):\n def __init__(self,pages=__dataclass_factory__,events=__dataclass_factory__):\n  self.pages=__dataclass_dflt_pages__() if pages is __dataclass_factory__ else pages\n  self.events=__dataclass_dflt_events__() if events is __dataclass_factory__ else events\n return __init__': _51,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pages__,__dataclass_dflt_events__,__dataclass_dflt_values__):\n def __init__(self,pages=__dataclass_dflt_pages__,events=__dataclass_dflt_events__,values=__dataclass_factory__):\n  __dataclass_set__(self,'pages',pages)\n  __dataclass_set__(self,'events',events)\n  __dataclass_set__(self,'values',__dataclass_dflt_values__() if values is __dataclass_factory__ else values)\n return __init__": _52,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_phrases__):\n def __init__(self,rows,tokens,holding,phrases=__dataclass_factory__):\n  __dataclass_set__(self,'rows',rows)\n  __dataclass_set__(self,'tokens',tokens)\n  __dataclass_set__(self,'holding',holding)\n  __dataclass_set__(self,'phrases',__dataclass_dflt_phrases__() if phrases is __dataclass_factory__ else phrases)\n return __init__": _53,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pins__,__dataclass_dflt_plan__,__dataclass_dflt_notebook__,__dataclass_dflt_fastmemo__,__dataclass_dflt_context_pool__,__dataclass_dflt_sections__,__dataclass_dflt_source__,__dataclass_dflt_expires__,__dataclass_dflt_milestone__,__dataclass_dflt_done__):\n def __init__(self,pins=__dataclass_dflt_pins__,plan=__dataclass_dflt_plan__,notebook=__dataclass_dflt_notebook__,fastmemo=__dataclass_dflt_fastmemo__,context_pool=__dataclass_dflt_context_pool__,sections=__dataclass_factory__,source=__dataclass_dflt_source__,expires=__dataclass_dflt_expires__,milestone=__dataclass_dflt_milestone__,done=__dataclass_dflt_done__):\n  __dataclass_set__(self,'pins',pins)\n  __dataclass_set__(self,'plan',plan)\n  __dataclass_set__(self,'notebook',notebook)\n  __dataclass_set__(self,'fastmemo',fastmemo)\n  __dataclass_set__(self,'context_pool',context_pool)\n  __dataclass_set__(self,'sections',__dataclass_dflt_sections__() if sections is __dataclass_factory__ else sections)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'expires',expires)\n  __dataclass_set__(self,'milestone',milestone)\n  __dataclass_set__(self,'done',done)\n return __init__": _54,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_pins_max__,__dataclass_dflt_pin_summary_max__,__dataclass_dflt_pin_title_max__,__dataclass_dflt_pin_default_ttl__,__dataclass_dflt_plan_max__,__dataclass_dflt_plan_text_max__,__dataclass_dflt_notebook_max__,__dataclass_dflt_notebook_compress_batch__,__dataclass_dflt_notebook_entry_max__,__dataclass_dflt_milestone_max__,__dataclass_dflt_fastmemo_section_max__,__dataclass_dflt_fastmemo_keep_recent__,__dataclass_dflt_fastmemo_entry_max__,__dataclass_dflt_fastmemo_sections__,__dataclass_dflt_pool_section__):\n def __init__(self,pins_max=__dataclass_dflt_pins_max__,pin_summary_max=__dataclass_dflt_pin_summary_max__,pin_title_max=__dataclass_dflt_pin_title_max__,pin_default_ttl=__dataclass_dflt_pin_default_ttl__,plan_max=__dataclass_dflt_plan_max__,plan_text_max=__dataclass_dflt_plan_text_max__,notebook_max=__dataclass_dflt_notebook_max__,notebook_compress_batch=__dataclass_dflt_notebook_compress_batch__,notebook_entry_max=__dataclass_dflt_notebook_entry_max__,milestone_max=__dataclass_dflt_milestone_max__,fastmemo_section_max=__dataclass_dflt_fastmemo_section_max__,fastmemo_keep_recent=__dataclass_dflt_fastmemo_keep_recent__,fastmemo_entry_max=__dataclass_dflt_fastmemo_entry_max__,fastmemo_sections=__dataclass_dflt_fastmemo_sections__,pool_section=__dataclass_dflt_pool_section__):\n  __dataclass_set__(self,'pins_max',pins_max)\n  __dataclass_set__(self,'pin_summary_max',pin_summary_max)\n  __dataclass_set__(self,'pin_title_max',pin_title_max)\n  __dataclass_set__(self,'pin_default_ttl',pin_default_ttl)\n  __dataclass_set__(self,'plan_max',plan_max)\n  __dataclass_set__(self,'plan_text_max',plan_text_max)\n  __dataclass_set__(self,'notebook_max',notebook_max)\n  __dataclass_set__(self,'notebook_compress_batch',notebook_compress_batch)\n  __dataclass_set__(self,'notebook_entry_max',notebook_entry_max)\n  __dataclass_set__(self,'milestone_max',milestone_max)\n  __dataclass_set__(self,'fastmemo_section_max',fastmemo_section_max)\n  __dataclass_set__(self,'fastmemo_keep_recent',fastmemo_keep_recent)\n  __dataclass_set__(self,'fastmemo_entry_max',fastmemo_entry_max)\n  __dataclass_set__(self,'fastmemo_sections',fastmemo_sections)\n  __dataclass_set__(self,'pool_section',pool_section)\n  self.__post_init__()\n return __init__": _55,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_planned_tokens__,__dataclass_dflt_payload_bytes__,__dataclass_dflt_memory_room__,__dataclass_dflt_cache__,__dataclass_dflt_whole__,__dataclass_dflt_blocks__):\n def __init__(self,history,window,window_tokens,retrieval,memory,state,changes,planned_tokens=__dataclass_dflt_planned_tokens__,payload_bytes=__dataclass_dflt_payload_bytes__,memory_room=__dataclass_dflt_memory_room__,cache=__dataclass_factory__,whole=__dataclass_dflt_whole__,blocks=__dataclass_factory__):\n  self.history=history\n  self.window=window\n  self.window_tokens=window_tokens\n  self.retrieval=retrieval\n  self.memory=memory\n  self.state=state\n  self.changes=changes\n  self.planned_tokens=planned_tokens\n  self.payload_bytes=payload_bytes\n  self.memory_room=memory_room\n  self.cache=__dataclass_dflt_cache__() if cache is __dataclass_factory__ else cache\n  self.whole=whole\n  self.blocks=__dataclass_dflt_blocks__() if blocks is __dataclass_factory__ else blocks\n return __init__': _56,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_policy__):\n def __init__(self,key_id,tenant,label,created_at,revoked_at,policy=__dataclass_factory__):\n  __dataclass_set__(self,'key_id',key_id)\n  __dataclass_set__(self,'tenant',tenant)\n  __dataclass_set__(self,'label',label)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'revoked_at',revoked_at)\n  __dataclass_set__(self,'policy',__dataclass_dflt_policy__() if policy is __dataclass_factory__ else policy)\n return __init__": _57,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_prefix__):\n def __init__(self,terms,prefix=__dataclass_dflt_prefix__):\n  __dataclass_set__(self,'terms',terms)\n  __dataclass_set__(self,'prefix',prefix)\n return __init__": _58,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_profiles__,__dataclass_dflt_long_after_turns__):\n def __init__(self,profiles=__dataclass_factory__,long_after_turns=__dataclass_dflt_long_after_turns__):\n  __dataclass_set__(self,'profiles',__dataclass_dflt_profiles__() if profiles is __dataclass_factory__ else profiles)\n  __dataclass_set__(self,'long_after_turns',long_after_turns)\n  self.__post_init__()\n return __init__": _59,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_ran__,__dataclass_dflt_succeeded__,__dataclass_dflt_failed__,__dataclass_dflt_retrying__,__dataclass_dflt_gave_up__,__dataclass_dflt_lost__,__dataclass_dflt_last_error__):\n def __init__(self,ran=__dataclass_dflt_ran__,succeeded=__dataclass_dflt_succeeded__,failed=__dataclass_dflt_failed__,retrying=__dataclass_dflt_retrying__,gave_up=__dataclass_dflt_gave_up__,lost=__dataclass_dflt_lost__,last_error=__dataclass_dflt_last_error__):\n  __dataclass_set__(self,'ran',ran)\n  __dataclass_set__(self,'succeeded',succeeded)\n  __dataclass_set__(self,'failed',failed)\n  __dataclass_set__(self,'retrying',retrying)\n  __dataclass_set__(self,'gave_up',gave_up)\n  __dataclass_set__(self,'lost',lost)\n  __dataclass_set__(self,'last_error',last_error)\n return __init__": _60,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_reasons__,__dataclass_dflt_time_range__,__dataclass_dflt_source__):\n def __init__(self,sources,reasons=__dataclass_factory__,time_range=__dataclass_dflt_time_range__,source=__dataclass_dflt_source__):\n  __dataclass_set__(self,'sources',sources)\n  __dataclass_set__(self,'reasons',__dataclass_dflt_reasons__() if reasons is __dataclass_factory__ else reasons)\n  __dataclass_set__(self,'time_range',time_range)\n  __dataclass_set__(self,'source',source)\n return __init__": _61,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_recall_count__,__dataclass_dflt_last_recall_round__,__dataclass_dflt_tokens__,__dataclass_dflt_source__):\n def __init__(self,page,first_seq,last_seq,lines,archived_round,recall_count=__dataclass_dflt_recall_count__,last_recall_round=__dataclass_dflt_last_recall_round__,tokens=__dataclass_dflt_tokens__,source=__dataclass_dflt_source__):\n  self.page=page\n  self.first_seq=first_seq\n  self.last_seq=last_seq\n  self.lines=lines\n  self.archived_round=archived_round\n  self.recall_count=recall_count\n  self.last_recall_round=last_recall_round\n  self.tokens=tokens\n  self.source=source\n return __init__': _62,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_requests__,__dataclass_dflt_skipped__,__dataclass_dflt_messages__,__dataclass_dflt_format__,__dataclass_dflt_tools_tokens__,__dataclass_dflt_cached_discount__,__dataclass_dflt_price__,__dataclass_dflt_session__,__dataclass_dflt_store__,__dataclass_dflt_tokenizer__,__dataclass_dflt_tokenizer_note__):\n def __init__(self,requests=__dataclass_factory__,skipped=__dataclass_factory__,messages=__dataclass_dflt_messages__,format=__dataclass_dflt_format__,tools_tokens=__dataclass_dflt_tools_tokens__,cached_discount=__dataclass_dflt_cached_discount__,price=__dataclass_dflt_price__,session=__dataclass_dflt_session__,store=__dataclass_dflt_store__,tokenizer=__dataclass_dflt_tokenizer__,tokenizer_note=__dataclass_dflt_tokenizer_note__):\n  self.requests=__dataclass_dflt_requests__() if requests is __dataclass_factory__ else requests\n  self.skipped=__dataclass_dflt_skipped__() if skipped is __dataclass_factory__ else skipped\n  self.messages=messages\n  self.format=format\n  self.tools_tokens=tools_tokens\n  self.cached_discount=cached_discount\n  self.price=price\n  self.session=session\n  self.store=store\n  self.tokenizer=tokenizer\n  self.tokenizer_note=tokenizer_note\n return __init__': _63,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_rows__):\n def __init__(self,columns,rows=__dataclass_factory__):\n  __dataclass_set__(self,'columns',columns)\n  __dataclass_set__(self,'rows',__dataclass_dflt_rows__() if rows is __dataclass_factory__ else rows)\n return __init__": _64,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_scrubbed__):\n def __init__(self,id,at,actor,action,tenant,user,sessions,counts,scrubbed=__dataclass_dflt_scrubbed__):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'at',at)\n  __dataclass_set__(self,'actor',actor)\n  __dataclass_set__(self,'action',action)\n  __dataclass_set__(self,'tenant',tenant)\n  __dataclass_set__(self,'user',user)\n  __dataclass_set__(self,'sessions',sessions)\n  __dataclass_set__(self,'counts',counts)\n  __dataclass_set__(self,'scrubbed',scrubbed)\n return __init__": _65,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_seconds__,__dataclass_dflt_rounds__):\n def __init__(self,seconds=__dataclass_dflt_seconds__,rounds=__dataclass_dflt_rounds__):\n  __dataclass_set__(self,'seconds',seconds)\n  __dataclass_set__(self,'rounds',rounds)\n return __init__": _66,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_session__,__dataclass_dflt_seq__,__dataclass_dflt_created_at__,__dataclass_dflt_page__):\n def __init__(self,text,source,kind,score,session=__dataclass_dflt_session__,seq=__dataclass_dflt_seq__,created_at=__dataclass_dflt_created_at__,page=__dataclass_dflt_page__):\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'source',source)\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'score',score)\n  __dataclass_set__(self,'session',session)\n  __dataclass_set__(self,'seq',seq)\n  __dataclass_set__(self,'created_at',created_at)\n  __dataclass_set__(self,'page',page)\n return __init__": _67,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_session__,__dataclass_dflt_user__):\n def __init__(self,tenant,session=__dataclass_dflt_session__,user=__dataclass_dflt_user__):\n  __dataclass_set__(self,'tenant',tenant)\n  __dataclass_set__(self,'session',session)\n  __dataclass_set__(self,'user',user)\n return __init__": _68,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_sessions__,__dataclass_dflt_start__,__dataclass_dflt_end__,__dataclass_dflt_roles__,__dataclass_dflt_below__):\n def __init__(self,sessions=__dataclass_dflt_sessions__,start=__dataclass_dflt_start__,end=__dataclass_dflt_end__,roles=__dataclass_dflt_roles__,below=__dataclass_dflt_below__):\n  __dataclass_set__(self,'sessions',sessions)\n  __dataclass_set__(self,'start',start)\n  __dataclass_set__(self,'end',end)\n  __dataclass_set__(self,'roles',roles)\n  __dataclass_set__(self,'below',below)\n return __init__": _69,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_shards__,__dataclass_dflt_where__,__dataclass_dflt_args__,__dataclass_dflt_window__):\n def __init__(self,shards=__dataclass_dflt_shards__,where=__dataclass_dflt_where__,args=__dataclass_dflt_args__,window=__dataclass_dflt_window__):\n  __dataclass_set__(self,'shards',shards)\n  __dataclass_set__(self,'where',where)\n  __dataclass_set__(self,'args',args)\n  __dataclass_set__(self,'window',window)\n return __init__": _70,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_shares__,__dataclass_dflt_prefix_tokens__,__dataclass_dflt_request_bytes__,__dataclass_dflt_events__,__dataclass_dflt_recipe__):\n def __init__(self,total_tokens,budget,sections,build_ms,messages,full_tokens,strategy,shares=__dataclass_factory__,prefix_tokens=__dataclass_dflt_prefix_tokens__,request_bytes=__dataclass_dflt_request_bytes__,events=__dataclass_dflt_events__,recipe=__dataclass_dflt_recipe__):\n  __dataclass_set__(self,'total_tokens',total_tokens)\n  __dataclass_set__(self,'budget',budget)\n  __dataclass_set__(self,'sections',sections)\n  __dataclass_set__(self,'build_ms',build_ms)\n  __dataclass_set__(self,'messages',messages)\n  __dataclass_set__(self,'full_tokens',full_tokens)\n  __dataclass_set__(self,'strategy',strategy)\n  __dataclass_set__(self,'shares',__dataclass_dflt_shares__() if shares is __dataclass_factory__ else shares)\n  __dataclass_set__(self,'prefix_tokens',prefix_tokens)\n  __dataclass_set__(self,'request_bytes',request_bytes)\n  __dataclass_set__(self,'events',events)\n  __dataclass_set__(self,'recipe',recipe)\n return __init__": _71,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_shown_text__,__dataclass_dflt_history__):\n def __init__(self,session,body,client_tools,client_names,budget,shown_text=__dataclass_dflt_shown_text__,history=__dataclass_dflt_history__):\n  self.session=session\n  self.body=body\n  self.client_tools=client_tools\n  self.client_names=client_names\n  self.budget=budget\n  self.shown_text=shown_text\n  self.history=history\n return __init__': _72,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_state__,__dataclass_dflt_retrieval__,__dataclass_dflt_contract_title__,__dataclass_dflt_contract__,__dataclass_dflt_extra__):\n def __init__(self,state=__dataclass_dflt_state__,retrieval=__dataclass_dflt_retrieval__,contract_title=__dataclass_dflt_contract_title__,contract=__dataclass_dflt_contract__,extra=__dataclass_factory__):\n  __dataclass_set__(self,'state',state)\n  __dataclass_set__(self,'retrieval',retrieval)\n  __dataclass_set__(self,'contract_title',contract_title)\n  __dataclass_set__(self,'contract',contract)\n  __dataclass_set__(self,'extra',__dataclass_dflt_extra__() if extra is __dataclass_factory__ else extra)\n return __init__": _73,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_status__,__dataclass_dflt_body__,__dataclass_dflt_retry_after__):\n def __init__(self,kind,detail,retryable,status=__dataclass_dflt_status__,body=__dataclass_dflt_body__,retry_after=__dataclass_dflt_retry_after__):\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'detail',detail)\n  __dataclass_set__(self,'retryable',retryable)\n  __dataclass_set__(self,'status',status)\n  __dataclass_set__(self,'body',body)\n  __dataclass_set__(self,'retry_after',retry_after)\n return __init__": _74,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_stop_reason__):\n def __init__(self,text,model,input_tokens,output_tokens,raw,stop_reason=__dataclass_dflt_stop_reason__):\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'model',model)\n  __dataclass_set__(self,'input_tokens',input_tokens)\n  __dataclass_set__(self,'output_tokens',output_tokens)\n  __dataclass_set__(self,'raw',raw)\n  __dataclass_set__(self,'stop_reason',stop_reason)\n return __init__": _75,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_strict__,__dataclass_dflt_agent__,__dataclass_dflt_form__,__dataclass_dflt_original__):\n def __init__(self,name,description,parameters,strict=__dataclass_dflt_strict__,agent=__dataclass_dflt_agent__,form=__dataclass_dflt_form__,original=__dataclass_dflt_original__):\n  __dataclass_set__(self,'name',name)\n  __dataclass_set__(self,'description',description)\n  __dataclass_set__(self,'parameters',parameters)\n  __dataclass_set__(self,'strict',strict)\n  __dataclass_set__(self,'agent',agent)\n  __dataclass_set__(self,'form',form)\n  __dataclass_set__(self,'original',original)\n return __init__": _76,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_summary__,__dataclass_dflt_encrypted_content__,__dataclass_dflt_content__,__dataclass_dflt_kind__):\n def __init__(self,id,summary=__dataclass_dflt_summary__,encrypted_content=__dataclass_dflt_encrypted_content__,content=__dataclass_dflt_content__,kind=__dataclass_dflt_kind__):\n  __dataclass_set__(self,'id',id)\n  __dataclass_set__(self,'summary',summary)\n  __dataclass_set__(self,'encrypted_content',encrypted_content)\n  __dataclass_set__(self,'content',content)\n  __dataclass_set__(self,'kind',kind)\n return __init__": _77,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_symbol__):\n def __init__(self,kind,title,start_line,end_line,text,symbol=__dataclass_dflt_symbol__):\n  __dataclass_set__(self,'kind',kind)\n  __dataclass_set__(self,'title',title)\n  __dataclass_set__(self,'start_line',start_line)\n  __dataclass_set__(self,'end_line',end_line)\n  __dataclass_set__(self,'text',text)\n  __dataclass_set__(self,'symbol',symbol)\n return __init__": _78,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_symbol__):\n def __init__(self,start,end,title,symbol=__dataclass_dflt_symbol__):\n  self.start=start\n  self.end=end\n  self.title=title\n  self.symbol=symbol\n return __init__': _79,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_terms__,__dataclass_dflt_sql__,__dataclass_dflt_args__):\n def __init__(self,terms=__dataclass_dflt_terms__,sql=__dataclass_dflt_sql__,args=__dataclass_dflt_args__):\n  __dataclass_set__(self,'terms',terms)\n  __dataclass_set__(self,'sql',sql)\n  __dataclass_set__(self,'args',args)\n return __init__": _80,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_text__,__dataclass_dflt_calls__):\n def __init__(self,text=__dataclass_factory__,calls=__dataclass_factory__):\n  self.text=__dataclass_dflt_text__() if text is __dataclass_factory__ else text\n  self.calls=__dataclass_dflt_calls__() if calls is __dataclass_factory__ else calls\n return __init__': _81,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_tools__,__dataclass_dflt_notes__,__dataclass_dflt_item__,__dataclass_dflt_items__,__dataclass_dflt_questions__):\n def __init__(self,format,messages,origins,tools=__dataclass_factory__,notes=__dataclass_factory__,item=__dataclass_dflt_item__,items=__dataclass_dflt_items__,questions=__dataclass_factory__):\n  __dataclass_set__(self,'format',format)\n  __dataclass_set__(self,'messages',messages)\n  __dataclass_set__(self,'origins',origins)\n  __dataclass_set__(self,'tools',__dataclass_dflt_tools__() if tools is __dataclass_factory__ else tools)\n  __dataclass_set__(self,'notes',__dataclass_dflt_notes__() if notes is __dataclass_factory__ else notes)\n  __dataclass_set__(self,'item',item)\n  __dataclass_set__(self,'items',items)\n  __dataclass_set__(self,'questions',__dataclass_dflt_questions__() if questions is __dataclass_factory__ else questions)\n return __init__": _82,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_tools__,__dataclass_dflt_segments__,__dataclass_dflt_memory__):\n def __init__(self,messages,stats,tools=__dataclass_dflt_tools__,segments=__dataclass_dflt_segments__,memory=__dataclass_dflt_memory__):\n  __dataclass_set__(self,'messages',messages)\n  __dataclass_set__(self,'stats',stats)\n  __dataclass_set__(self,'tools',tools)\n  __dataclass_set__(self,'segments',segments)\n  __dataclass_set__(self,'memory',memory)\n return __init__": _83,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_user__,__dataclass_dflt_session_id__,__dataclass_dflt_session__):\n def __init__(self,level,tenant,user=__dataclass_dflt_user__,session_id=__dataclass_dflt_session_id__,session=__dataclass_dflt_session__):\n  __dataclass_set__(self,'level',level)\n  __dataclass_set__(self,'tenant',tenant)\n  __dataclass_set__(self,'user',user)\n  __dataclass_set__(self,'session_id',session_id)\n  __dataclass_set__(self,'session',session)\n  self.__post_init__()\n return __init__": _84,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_values__):\n def __init__(self,paged,window,values=__dataclass_factory__):\n  self.paged=paged\n  self.window=window\n  self.values=__dataclass_dflt_values__() if values is __dataclass_factory__ else values\n return __init__': _85,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_version__,__dataclass_dflt_sessions__,__dataclass_dflt_behind__,__dataclass_dflt_item_lists__,__dataclass_dflt_items__,__dataclass_dflt_docs_from__):\n def __init__(self,version=__dataclass_dflt_version__,sessions=__dataclass_factory__,behind=__dataclass_factory__,item_lists=__dataclass_factory__,items=__dataclass_factory__,docs_from=__dataclass_factory__):\n  self.version=version\n  self.sessions=__dataclass_dflt_sessions__() if sessions is __dataclass_factory__ else sessions\n  self.behind=__dataclass_dflt_behind__() if behind is __dataclass_factory__ else behind\n  self.item_lists=__dataclass_dflt_item_lists__() if item_lists is __dataclass_factory__ else item_lists\n  self.items=__dataclass_dflt_items__() if items is __dataclass_factory__ else items\n  self.docs_from=__dataclass_dflt_docs_from__() if docs_from is __dataclass_factory__ else docs_from\n return __init__': _86,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_whole__,__dataclass_dflt_blocks__):\n def __init__(self,recipe,limit,specs,specs_all_in,tools_tokens,agent,agent_tokens,head,room,caps,memory,shown,state,reserve,heads,whole=__dataclass_dflt_whole__,blocks=__dataclass_factory__):\n  self.recipe=recipe\n  self.limit=limit\n  self.specs=specs\n  self.specs_all_in=specs_all_in\n  self.tools_tokens=tools_tokens\n  self.agent=agent\n  self.agent_tokens=agent_tokens\n  self.head=head\n  self.room=room\n  self.caps=caps\n  self.memory=memory\n  self.shown=shown\n  self.state=state\n  self.reserve=reserve\n  self.heads=heads\n  self.whole=whole\n  self.blocks=__dataclass_dflt_blocks__() if blocks is __dataclass_factory__ else blocks\n return __init__': _87,
    'def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_writing__,__dataclass_dflt_items__,__dataclass_dflt_meta__,__dataclass_dflt_latest_event__,__dataclass_dflt_unsaved_events__,__dataclass_dflt_unsaved_meta__,__dataclass_dflt_unsaved_items__):\n def __init__(self,writing=__dataclass_dflt_writing__,items=__dataclass_dflt_items__,meta=__dataclass_factory__,latest_event=__dataclass_dflt_latest_event__,unsaved_events=__dataclass_factory__,unsaved_meta=__dataclass_factory__,unsaved_items=__dataclass_factory__):\n  self.writing=writing\n  self.items=items\n  self.meta=__dataclass_dflt_meta__() if meta is __dataclass_factory__ else meta\n  self.latest_event=latest_event\n  self.unsaved_events=__dataclass_dflt_unsaved_events__() if unsaved_events is __dataclass_factory__ else unsaved_events\n  self.unsaved_meta=__dataclass_dflt_unsaved_meta__() if unsaved_meta is __dataclass_factory__ else unsaved_meta\n  self.unsaved_items=__dataclass_dflt_unsaved_items__() if unsaved_items is __dataclass_factory__ else unsaved_items\n return __init__': _88,
    "def __create_fn__(__dataclass_set__,__dataclass_factory__,__dataclass_dflt_y_min__):\n def __init__(self,width,height,left,right,top,bottom,n,y_max,y_min=__dataclass_dflt_y_min__):\n  __dataclass_set__(self,'width',width)\n  __dataclass_set__(self,'height',height)\n  __dataclass_set__(self,'left',left)\n  __dataclass_set__(self,'right',right)\n  __dataclass_set__(self,'top',top)\n  __dataclass_set__(self,'bottom',bottom)\n  __dataclass_set__(self,'n',n)\n  __dataclass_set__(self,'y_max',y_max)\n  __dataclass_set__(self,'y_min',y_min)\n return __init__": _89,
    'def __create_fn__(_tuple_new):\n return lambda _cls, analyzer, messages, embedder, vectors, vector_backend: _tuple_new(_cls, (analyzer, messages, embedder, vectors, vector_backend))': _90,
    'def __create_fn__(_tuple_new):\n return lambda _cls, candidates, saved, gathered, around: _tuple_new(_cls, (candidates, saved, gathered, around))': _91,
    'def __create_fn__(_tuple_new):\n return lambda _cls, content, sha256, size, chars, lines, exit_code, summary, tool_name, arguments, stored, file_written: _tuple_new(_cls, (content, sha256, size, chars, lines, exit_code, summary, tool_name, arguments, stored, file_written))': _92,
    'def __create_fn__(_tuple_new):\n return lambda _cls, context_window, provider, encoding: _tuple_new(_cls, (context_window, provider, encoding))': _93,
    'def __create_fn__(_tuple_new):\n return lambda _cls, doc, session_id, message: _tuple_new(_cls, (doc, session_id, message))': _94,
    'def __create_fn__(_tuple_new):\n return lambda _cls, doc, session_id, seq: _tuple_new(_cls, (doc, session_id, seq))': _95,
    'def __create_fn__(_tuple_new):\n return lambda _cls, entries, first, last, ids: _tuple_new(_cls, (entries, first, last, ids))': _96,
    'def __create_fn__(_tuple_new):\n return lambda _cls, epoch, last_seq, held, system_seq, raw_total, has_tool_results, hides_output, seqs, roles, tokens, cum, page_starts: _tuple_new(_cls, (epoch, last_seq, held, system_seq, raw_total, has_tool_results, hides_output, seqs, roles, tokens, cum, page_starts))': _97,
    'def __create_fn__(_tuple_new):\n return lambda _cls, epoch, seq, said, page, context: _tuple_new(_cls, (epoch, seq, said, page, context))': _98,
    'def __create_fn__(_tuple_new):\n return lambda _cls, file_roots, max_message_bytes: _tuple_new(_cls, (file_roots, max_message_bytes))': _99,
    'def __create_fn__(_tuple_new):\n return lambda _cls, id, kind, key, payload, state, attempts, max_attempts, last_error, result, lease_owner, lease_expires, run_after, created_at, updated_at: _tuple_new(_cls, (id, kind, key, payload, state, attempts, max_attempts, last_error, result, lease_owner, lease_expires, run_after, created_at, updated_at))': _100,
    'def __create_fn__(_tuple_new):\n return lambda _cls, id, path, kind, mtime_ns, size, sha256: _tuple_new(_cls, (id, path, kind, mtime_ns, size, sha256))': _101,
    'def __create_fn__(_tuple_new):\n return lambda _cls, id, path, start_line, end_line, title, symbol, kind, text: _tuple_new(_cls, (id, path, start_line, end_line, title, symbol, kind, text))': _102,
    'def __create_fn__(_tuple_new):\n return lambda _cls, id, sha256, size, chars, lines, content: _tuple_new(_cls, (id, sha256, size, chars, lines, content))': _103,
    'def __create_fn__(_tuple_new):\n return lambda _cls, id, size, chars, lines, exit_code, summary, tool_name, call_id, arguments, owner, session_id, created_at, stored, sha256, is_error, seq: _tuple_new(_cls, (id, size, chars, lines, exit_code, summary, tool_name, call_id, arguments, owner, session_id, created_at, stored, sha256, is_error, seq))': _104,
    'def __create_fn__(_tuple_new):\n return lambda _cls, key_id, tenant, key_hash, label, created_at, revoked_at, policy: _tuple_new(_cls, (key_id, tenant, key_hash, label, created_at, revoked_at, policy))': _105,
    'def __create_fn__(_tuple_new):\n return lambda _cls, kind, key, payload, max_attempts, run_after: _tuple_new(_cls, (kind, key, payload, max_attempts, run_after))': _106,
    'def __create_fn__(_tuple_new):\n return lambda _cls, low_watermark, evict_unrecalled_rounds, evict_unchanged_rounds, contents_max_tokens, contents_entry_lines, language, recent_max_tokens, recent_pages, summary_swap_rounds: _tuple_new(_cls, (low_watermark, evict_unrecalled_rounds, evict_unchanged_rounds, contents_max_tokens, contents_entry_lines, language, recent_max_tokens, recent_pages, summary_swap_rounds))': _107,
    'def __create_fn__(_tuple_new):\n return lambda _cls, match, terms, short_terms: _tuple_new(_cls, (match, terms, short_terms))': _108,
    'def __create_fn__(_tuple_new):\n return lambda _cls, message, keys, opener: _tuple_new(_cls, (message, keys, opener))': _109,
    'def __create_fn__(_tuple_new):\n return lambda _cls, name, priority, tokens, required: _tuple_new(_cls, (name, priority, tokens, required))': _110,
    'def __create_fn__(_tuple_new):\n return lambda _cls, name, sections, recent_steps, tool_head: _tuple_new(_cls, (name, sections, recent_steps, tool_head))': _111,
    'def __create_fn__(_tuple_new):\n return lambda _cls, name, shares: _tuple_new(_cls, (name, shares))': _112,
    'def __create_fn__(_tuple_new):\n return lambda _cls, node,: _tuple_new(_cls, (node,))': _113,
    'def __create_fn__(_tuple_new):\n return lambda _cls, ok, text: _tuple_new(_cls, (ok, text))': _114,
    'def __create_fn__(_tuple_new):\n return lambda _cls, page, epoch, recent: _tuple_new(_cls, (page, epoch, recent))': _115,
    'def __create_fn__(_tuple_new):\n return lambda _cls, page, first_seq, last_seq, state, archived_round, recall_count, last_recall_round, lines, source, tokens, counted: _tuple_new(_cls, (page, first_seq, last_seq, state, archived_round, recall_count, last_recall_round, lines, source, tokens, counted))': _116,
    'def __create_fn__(_tuple_new):\n return lambda _cls, parts, aside: _tuple_new(_cls, (parts, aside))': _117,
    'def __create_fn__(_tuple_new):\n return lambda _cls, pattern, read, needs: _tuple_new(_cls, (pattern, read, needs))': _118,
    'def __create_fn__(_tuple_new):\n return lambda _cls, pending, failed, gave_up, last_error: _tuple_new(_cls, (pending, failed, gave_up, last_error))': _119,
    'def __create_fn__(_tuple_new):\n return lambda _cls, position, prepared: _tuple_new(_cls, (position, prepared))': _120,
    'def __create_fn__(_tuple_new):\n return lambda _cls, provider, per_message, per_name, per_tool_call, per_tool_result, image_low, image, reply_priming: _tuple_new(_cls, (provider, per_message, per_name, per_tool_call, per_tool_result, image_low, image, reply_priming))': _121,
    'def __create_fn__(_tuple_new):\n return lambda _cls, round, kind, page, reason, last_page, at: _tuple_new(_cls, (round, kind, page, reason, last_page, at))': _122,
    'def __create_fn__(_tuple_new):\n return lambda _cls, scope, kind, subject, text, norm, summary, source, page, valid_from, created: _tuple_new(_cls, (scope, kind, subject, text, norm, summary, source, page, valid_from, created))': _123,
    'def __create_fn__(_tuple_new):\n return lambda _cls, scope, kinds, exclude_kinds, current: _tuple_new(_cls, (scope, kinds, exclude_kinds, current))': _124,
    'def __create_fn__(_tuple_new):\n return lambda _cls, seq, role, tokens, shown: _tuple_new(_cls, (seq, role, tokens, shown))': _125,
    'def __create_fn__(_tuple_new):\n return lambda _cls, seqs, first_page, pages, call_ids, artifacts: _tuple_new(_cls, (seqs, first_page, pages, call_ids, artifacts))': _126,
    'def __create_fn__(_tuple_new):\n return lambda _cls, seqs, roles, tokens, shown: _tuple_new(_cls, (seqs, roles, tokens, shown))': _127,
    'def __create_fn__(_tuple_new):\n return lambda _cls, session_id, seq, role, page, created, text, context: _tuple_new(_cls, (session_id, seq, role, page, created, text, context))': _128,
    'def __create_fn__(_tuple_new):\n return lambda _cls, size, rare, common, counted: _tuple_new(_cls, (size, rare, common, counted))': _129,
    'def __create_fn__(_tuple_new):\n return lambda _cls, stored, artifact, text: _tuple_new(_cls, (stored, artifact, text))': _130,
    'def __create_fn__(_tuple_new):\n return lambda _cls, terms, numbers, paths, idents, entities, question, filler, columns: _tuple_new(_cls, (terms, numbers, paths, idents, entities, question, filler, columns))': _131,
    'def __create_fn__(_tuple_new):\n return lambda _cls, text, subject, source, summary, page, at: _tuple_new(_cls, (text, subject, source, summary, page, at))': _132,
    'def __create_fn__(_tuple_new):\n return lambda _cls, title, lines, form: _tuple_new(_cls, (title, lines, form))': _133,
    'def __create_fn__(_tuple_new):\n return lambda _cls, title, lines, source, form: _tuple_new(_cls, (title, lines, source, form))': _134,
    'def __create_fn__(_tuple_new):\n return lambda _cls, version, epoch, last_seq, work_event: _tuple_new(_cls, (version, epoch, last_seq, work_event))': _135,
    'def __create_fn__(_tuple_new):\n return lambda _cls, version, name, sql: _tuple_new(_cls, (version, name, sql))': _136,
    'def __create_fn__(_tuple_new):\n return lambda _cls, window, window_tokens, specs, tools_tokens, head: _tuple_new(_cls, (window, window_tokens, specs, tools_tokens, head))': _137,
}
